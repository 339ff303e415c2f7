//! The daemon's lines for its operator, on standard error.
//!
//! A detached daemon's standard error is `daemon.log` on the SSD, which fills with the
//! cache; a foreground one's may be a pipe whose reader has gone. `eprintln!` panics when
//! it cannot write, and a panic in a request handler poisons the locks every later
//! request takes: the whole mount then answers EIO. A line that cannot be written is
//! dropped instead, as a full syslog would drop it.

/// `eprintln!` that never panics.
macro_rules! tell {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}
