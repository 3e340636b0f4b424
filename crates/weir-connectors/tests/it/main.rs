//! The connectors against real servers on loopback: a throwaway PostgreSQL
//! cluster per test (Debian's `postgresql`; a test fails, saying how to
//! install it, when it is missing).

mod postgres;
