//! The class ioctls, decoded from swift_dss/formats/ioctl.toml: the one definition the
//! Python side reads too, compiled in so the two cannot drift apart unnoticed.

use serde::Deserialize;

const CONTRACT: &str = include_str!(env!("DSS_IOCTL_CONTRACT"));

#[derive(Deserialize)]
struct Request {
    nr: u32,
    size: u32,
    fields: Vec<(String, String)>,
}

#[derive(Deserialize)]
struct Contract {
    #[serde(rename = "type")]
    kind: u32,
    set_class: Request,
    reclassify: Request,
    drop_cache: Request,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Class of the following I/O on this handle.
    SetClass { class: u32, flags: u32 },
    /// Class of stored bytes [offset, offset + length); length 0: to the end.
    Reclassify {
        offset: u64,
        length: u64,
        class: u32,
        flags: u32,
    },
    /// POSIX_FADV_DONTNEED of [offset, offset + length) for the modelled page cache;
    /// length 0: to the end.
    DropCache { offset: u64, length: u64 },
}

pub struct Ioctls {
    set_class: u32,
    reclassify: u32,
    drop_cache: u32,
    set_class_size: usize,
    reclassify_size: usize,
    drop_cache_size: usize,
}

fn request_number(kind: u32, r: &Request) -> u32 {
    (1 << 30) | (r.size << 16) | (kind << 8) | r.nr
}

fn expect_layout(r: &Request, want: &[(&str, &str)]) -> Result<(), String> {
    let got: Vec<(&str, &str)> = r
        .fields
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    if got != want {
        return Err(format!(
            "ioctl.toml fields {got:?}, this build decodes {want:?}"
        ));
    }
    let bytes: u32 = want
        .iter()
        .map(|(_, t)| if *t == "u64" { 8 } else { 4 })
        .sum();
    if bytes != r.size {
        return Err(format!(
            "ioctl.toml size {} but fields take {bytes}",
            r.size
        ));
    }
    Ok(())
}

impl Ioctls {
    pub fn load() -> Result<Ioctls, String> {
        Self::parse(CONTRACT)
    }

    pub fn parse(text: &str) -> Result<Ioctls, String> {
        let c: Contract = toml::from_str(text).map_err(|e| e.to_string())?;
        expect_layout(&c.set_class, &[("class", "u32"), ("flags", "u32")])?;
        expect_layout(
            &c.reclassify,
            &[
                ("offset", "u64"),
                ("length", "u64"),
                ("class", "u32"),
                ("flags", "u32"),
            ],
        )?;
        expect_layout(&c.drop_cache, &[("offset", "u64"), ("length", "u64")])?;
        Ok(Ioctls {
            set_class: request_number(c.kind, &c.set_class),
            reclassify: request_number(c.kind, &c.reclassify),
            drop_cache: request_number(c.kind, &c.drop_cache),
            set_class_size: c.set_class.size as usize,
            reclassify_size: c.reclassify.size as usize,
            drop_cache_size: c.drop_cache.size as usize,
        })
    }

    #[cfg(test)]
    pub fn set_class_cmd(&self) -> u32 {
        self.set_class
    }

    #[cfg(test)]
    pub fn reclassify_cmd(&self) -> u32 {
        self.reclassify
    }

    #[cfg(test)]
    pub fn drop_cache_cmd(&self) -> u32 {
        self.drop_cache
    }

    /// Decode a request; `None` for commands that are not ours or payloads too short.
    pub fn decode(&self, cmd: u32, data: &[u8]) -> Option<Command> {
        let u32_at = |o: usize| u32::from_le_bytes(data[o..o + 4].try_into().unwrap());
        let u64_at = |o: usize| u64::from_le_bytes(data[o..o + 8].try_into().unwrap());
        if cmd == self.set_class && data.len() >= self.set_class_size {
            Some(Command::SetClass {
                class: u32_at(0),
                flags: u32_at(4),
            })
        } else if cmd == self.reclassify && data.len() >= self.reclassify_size {
            Some(Command::Reclassify {
                offset: u64_at(0),
                length: u64_at(8),
                class: u32_at(16),
                flags: u32_at(20),
            })
        } else if cmd == self.drop_cache && data.len() >= self.drop_cache_size {
            Some(Command::DropCache {
                offset: u64_at(0),
                length: u64_at(8),
            })
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_follow_the_iow_encoding() {
        let io = Ioctls::load().unwrap();
        // _IOW('D', 1, 8), _IOW('D', 2, 24) and _IOW('D', 3, 16) as the Linux headers
        // compute them.
        assert_eq!(io.set_class_cmd(), 0x4008_4401);
        assert_eq!(io.reclassify_cmd(), 0x4018_4402);
        assert_eq!(io.drop_cache_cmd(), 0x4010_4403);
    }

    #[test]
    fn decodes_little_endian_payloads() {
        let io = Ioctls::load().unwrap();
        let mut p = Vec::new();
        p.extend_from_slice(&4096u64.to_le_bytes());
        p.extend_from_slice(&0u64.to_le_bytes());
        p.extend_from_slice(&31u32.to_le_bytes());
        p.extend_from_slice(&0u32.to_le_bytes());
        assert_eq!(
            io.decode(io.reclassify_cmd(), &p),
            Some(Command::Reclassify {
                offset: 4096,
                length: 0,
                class: 31,
                flags: 0
            })
        );
        assert_eq!(
            io.decode(io.set_class_cmd(), &[24, 0, 0, 0, 0, 0, 0, 0]),
            Some(Command::SetClass {
                class: 24,
                flags: 0
            })
        );
        assert_eq!(
            io.decode(io.drop_cache_cmd(), &p[..16]),
            Some(Command::DropCache {
                offset: 4096,
                length: 0
            })
        );
        assert_eq!(io.decode(io.drop_cache_cmd(), &p[..15]), None);
        assert_eq!(io.decode(io.set_class_cmd(), &[24, 0, 0]), None);
        assert_eq!(io.decode(0x5401, &p), None);
    }

    #[test]
    fn rejects_a_changed_layout() {
        let changed = CONTRACT.replace(
            r#"["flags", "u32"]]  # flags"#,
            r#"["flags", "u64"]]  # flags"#,
        );
        assert_ne!(changed, CONTRACT);
        assert!(Ioctls::parse(&changed).is_err());
    }
}
