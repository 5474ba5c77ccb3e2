//! The log's operations against the store models.
