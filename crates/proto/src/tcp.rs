//! TCP Tahoe, Reno, NewReno (in progress).
