// The translation unit that owns lpbench's precompiled torch header (see LpbenchCompileOptions).
