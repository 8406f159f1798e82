//! ATP sender and receiver (in progress).
