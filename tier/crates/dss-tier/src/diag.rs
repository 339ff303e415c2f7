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

/// `print!` for a command's output, which never panics either. Output that cannot be
/// written ends the command with status 1: quietly when its reader has gone (`dss-tier
/// dump | head`), as click ends the `dss` commands; with the reason otherwise (`>
/// /dev/full`).
macro_rules! say {
    ($($arg:tt)*) => { $crate::diag::emit(format_args!($($arg)*)) };
}

/// `println!` that never panics, as `say!`.
macro_rules! sayln {
    ($($arg:tt)*) => { $crate::diag::emit(format_args!("{}\n", format_args!($($arg)*))) };
}

pub fn emit(args: std::fmt::Arguments) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            tell!("dss-tier: standard output: {e}");
        }
        std::process::exit(1);
    }
}
