//! Export: see submodules.
