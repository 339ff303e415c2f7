//! The control channel of a running mount: `dss-tier flush`, `reset-counters` and
//! `reload-policy` reach the daemon as a write of a reserved xattr of the mount's root
//! (`CONTROL_XATTR`), the way `stats` reads it through another. Only root may write it.
//! The write returns once the daemon has carried the request out; the same process then
//! reads the xattr for the outcome (the daemon keeps it per requesting process until
//! read), so that a refusal comes back with its reason rather than a bare errno.

use crate::core::Core;
use crate::stats::{DevStats, Stats};
use dss_engine::{Mode, Policy};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The root's xattr that carries control requests (written) and their outcome (read).
pub const CONTROL_XATTR: &str = "user.dss-tier.control";

/// Outcomes kept for processes that have not read theirs yet (one that died before it
/// did must not make the daemon grow).
const KEPT_OUTCOMES: usize = 64;

/// A control request, as written to `CONTROL_XATTR`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Write back every dirty block now.
    Flush,
    /// Zero the activity counters.
    ResetCounters,
    /// Write back and empty the device models' page caches.
    DropCaches,
    /// Read the policy file again: the mount's own, or this one (which then becomes the
    /// mount's).
    ReloadPolicy(Option<PathBuf>),
}

impl Request {
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Request::Flush => b"flush".to_vec(),
            Request::ResetCounters => b"reset-counters".to_vec(),
            Request::DropCaches => b"drop-caches".to_vec(),
            Request::ReloadPolicy(None) => b"reload-policy".to_vec(),
            Request::ReloadPolicy(Some(p)) => {
                let mut v = b"reload-policy ".to_vec();
                v.extend_from_slice(p.as_os_str().as_encoded_bytes());
                v
            }
        }
    }

    pub fn decode(value: &[u8]) -> Result<Request, String> {
        let text = std::str::from_utf8(value).map_err(|_| "control request is not UTF-8")?;
        Ok(match text.split_once(' ') {
            None if text == "flush" => Request::Flush,
            None if text == "reset-counters" => Request::ResetCounters,
            None if text == "drop-caches" => Request::DropCaches,
            None if text == "reload-policy" => Request::ReloadPolicy(None),
            Some(("reload-policy", path)) if Path::new(path).is_absolute() => {
                Request::ReloadPolicy(Some(PathBuf::from(path)))
            }
            _ => return Err(format!("unknown control request {text:?}")),
        })
    }
}

/// What a control request came to, as the daemon hands it back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    pub ok: bool,
    /// One line: what was done, or why not.
    pub message: String,
}

/// What changes under a running mount: the policy it runs, and the device counters'
/// zero point.
struct Live {
    policy_path: PathBuf,
    policy_name: String,
    /// `mount --mode`: kept across reloads; otherwise each policy's own mode.
    mode_override: Option<Mode>,
    mode: Mode,
    /// The classify rules the mount started with (as text: they only apply from a mount).
    classify: String,
    device_base: BTreeMap<String, DevStats>,
}

pub struct Control {
    live: Mutex<Live>,
    outcomes: Mutex<VecDeque<(u32, Outcome)>>,
    /// The HDD directory, synced as a whole after a flush.
    hdd: PathBuf,
}

impl Control {
    pub fn new(
        policy_path: PathBuf,
        policy: &Policy,
        mode_override: Option<Mode>,
        hdd: PathBuf,
    ) -> Control {
        Control {
            live: Mutex::new(Live {
                policy_path,
                policy_name: policy.name.clone(),
                mode_override,
                mode: mode_override.unwrap_or(policy.mode),
                classify: format!("{:?}", policy.classify),
                device_base: BTreeMap::new(),
            }),
            outcomes: Mutex::new(VecDeque::new()),
            hdd,
        }
    }

    /// Carry out the request written by process `pid` and keep its outcome for it.
    pub fn run(&self, core: &Core, pid: u32, value: &[u8]) -> bool {
        let result = Request::decode(value).and_then(|r| self.carry_out(core, r));
        let outcome = match result {
            Ok(message) => Outcome { ok: true, message },
            Err(message) => Outcome {
                ok: false,
                message: one_line(&message),
            },
        };
        let ok = outcome.ok;
        let mut kept = self.outcomes.lock().unwrap();
        kept.retain(|(p, _)| *p != pid);
        if kept.len() == KEPT_OUTCOMES {
            kept.pop_front();
        }
        kept.push_back((pid, outcome));
        ok
    }

    /// The outcome of process `pid`'s latest request (handed out once).
    pub fn outcome(&self, pid: u32) -> Option<Outcome> {
        let mut kept = self.outcomes.lock().unwrap();
        let at = kept.iter().position(|(p, _)| *p == pid)?;
        kept.remove(at).map(|(_, o)| o)
    }

    fn carry_out(&self, core: &Core, request: Request) -> Result<String, String> {
        match request {
            Request::Flush => {
                let before = core.stats();
                core.flush_dirty().map_err(|e| format!("write-back: {e}"))?;
                // Bypassed writes went to the HDD files without a sync: now they are
                // on the HDD too.
                let dir = std::fs::File::open(&self.hdd).map_err(|e| e.to_string())?;
                rustix::fs::syncfs(&dir).map_err(|e| format!("sync of the HDD: {e}"))?;
                let pinned = core.stats().pinned_entries;
                Ok(format!(
                    "flushed: {} dirty blocks written back{}",
                    before.dirty_entries,
                    if pinned > 0 {
                        format!("; {pinned} pinned blocks stay on the SSD (placement ssd)")
                    } else {
                        String::new()
                    }
                ))
            }
            Request::ResetCounters => {
                // The device counters are the models', which only count up: their
                // values now become the zero point of the stats document.
                let mut live = self.live.lock().unwrap();
                core.reset_counters();
                live.device_base = core.stats().devices;
                Ok("counters reset".into())
            }
            Request::DropCaches => {
                let dropped = core.drop_model_caches();
                Ok(if dropped > 0 {
                    format!("model page cache dropped: {dropped} bytes")
                } else {
                    "no model page cache to drop".into()
                })
            }
            Request::ReloadPolicy(path) => self.reload(core, path),
        }
    }

    fn reload(&self, core: &Core, path: Option<PathBuf>) -> Result<String, String> {
        let mut live = self.live.lock().unwrap();
        let path = path.unwrap_or_else(|| live.policy_path.clone());
        let shown = path.display();
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{shown}: {e}"))?;
        let policy = Policy::parse(&text).map_err(|e| format!("{shown}: {e}"))?;
        let resolved = policy.resolve(live.mode_override);
        core.set_policy(&resolved)
            .map_err(|e| format!("{shown}: {e}; the policy in force stays"))?;
        let classify_kept = format!("{:?}", policy.classify) != live.classify;
        live.policy_name = policy.name.clone();
        live.mode = resolved.mode;
        live.policy_path = path.clone();
        Ok(format!(
            "policy {} (mode {}) from {} in force{}",
            policy.name,
            resolved.mode,
            path.display(),
            if classify_kept {
                "; its [classify] rules differ and apply from the next mount"
            } else {
                ""
            }
        ))
    }

    /// The stats document as the operator sees it: the policy in force, and the device
    /// counters since the last reset.
    pub fn stats(&self, core: &Core) -> Stats {
        let live = self.live.lock().unwrap();
        let mut s = core.stats();
        s.policy = live.policy_name.clone();
        s.mode = live.mode.to_string();
        for (name, d) in &mut s.devices {
            if let Some(base) = live.device_base.get(name) {
                *d = since(d, base);
            }
        }
        s
    }
}

/// Device counters `d` counted from `base` on.
fn since(d: &DevStats, base: &DevStats) -> DevStats {
    DevStats {
        model: d.model.clone(),
        ops: d.ops.saturating_sub(base.ops),
        bytes: d.bytes.saturating_sub(base.bytes),
        busy_s: (d.busy_s - base.busy_s).max(0.0),
        read_ops: d.read_ops.saturating_sub(base.read_ops),
        write_ops: d.write_ops.saturating_sub(base.write_ops),
        read_bytes: d.read_bytes.saturating_sub(base.read_bytes),
        write_bytes: d.write_bytes.saturating_sub(base.write_bytes),
        writeback_ops: d.writeback_ops.saturating_sub(base.writeback_ops),
        writeback_bytes: d.writeback_bytes.saturating_sub(base.writeback_bytes),
        writeback_busy_s: (d.writeback_busy_s - base.writeback_busy_s).max(0.0),
    }
}

/// A multi-line error (a TOML parse error points at the line with a caret) as one line:
/// where it is, and what is wrong.
pub fn one_line(message: &str) -> String {
    let lines: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('|') && !l.contains(" | "))
        .collect();
    match lines.as_slice() {
        [] => message.trim().to_string(),
        [one] => one.to_string(),
        [first, .., last] => format!("{first}: {last}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_and_junk_is_refused() {
        for r in [
            Request::Flush,
            Request::ResetCounters,
            Request::DropCaches,
            Request::ReloadPolicy(None),
            Request::ReloadPolicy(Some("/etc/dss/p q.toml".into())),
        ] {
            assert_eq!(Request::decode(&r.encode()), Ok(r));
        }
        for bad in [
            &b"flush now"[..],
            b"reload-policy p.toml",
            b"",
            b"\xff",
            b"stop",
        ] {
            assert!(Request::decode(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn toml_errors_become_one_line() {
        let e = "TOML parse error at line 3, column 1\n  |\n3 | low_water = 0.1\n  | ^^^\n\
                 unknown field `low_water`\n";
        assert_eq!(
            one_line(e),
            "TOML parse error at line 3, column 1: unknown field `low_water`"
        );
        assert_eq!(one_line("plain"), "plain");
    }
}
