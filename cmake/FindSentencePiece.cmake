# SentencePiece (Debian's libsentencepiece-dev ships headers, libraries and a pkg-config file but
# no CMake package): defines SentencePiece::SentencePiece, the processor and the trainer.
find_path(SentencePiece_INCLUDE_DIR sentencepiece_processor.h)
find_library(SentencePiece_LIBRARY sentencepiece)
find_library(SentencePiece_TRAIN_LIBRARY sentencepiece_train)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(SentencePiece
  REQUIRED_VARS SentencePiece_INCLUDE_DIR SentencePiece_LIBRARY SentencePiece_TRAIN_LIBRARY)
if(SentencePiece_FOUND AND NOT TARGET SentencePiece::SentencePiece)
  add_library(SentencePiece::SentencePiece INTERFACE IMPORTED)
  set_target_properties(SentencePiece::SentencePiece PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${SentencePiece_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${SentencePiece_TRAIN_LIBRARY};${SentencePiece_LIBRARY}")
endif()
