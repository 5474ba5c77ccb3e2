//! Elector tests (see below).
