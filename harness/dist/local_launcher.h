#pragma once

#include <chrono>
#include <string>

// `lpbench run --nproc-per-node N`: N copies of this program on this machine, as ranks 0 … N-1
// of one data-parallel run, started the way torchrun starts its workers.
namespace lpbench::dist {

// Hosts the rendezvous store on a free port of 127.0.0.1, starts the ranks with this process's
// own command line and RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR and
// MASTER_PORT, and waits for them. A rank that exits abnormally is named on stderr and in the
// store (the survivors' errors quote it); ranks still running `timeout` (plus a grace period)
// after it are killed. Where rank 0 did not end normally, the database `db` is opened once more
// so that its unfinished runs are marked interrupted. SIGINT and SIGTERM are passed on to every
// rank, which all stop after the same step (runner/stop_signal.h), their runs `interrupted`.
// Returns 0 when every rank exited 0, 2 when any refused its input, else 1.
int launch_local(int nproc, std::chrono::seconds timeout, const std::string& db);

}  // namespace lpbench::dist
