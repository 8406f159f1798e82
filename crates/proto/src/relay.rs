//! Relay delay averaging and stamping (in progress).
