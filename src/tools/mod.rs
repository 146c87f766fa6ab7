//! Tool-call emulation for models without the "tools" capability.
