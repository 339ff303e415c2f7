//! The mount table of this process's mount namespace, parsed from /proc/self/mountinfo
//! (proc(5)): one entry per mount, its path fields with the kernel's octal escapes
//! undone.

use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

const MOUNTINFO: &str = "/proc/self/mountinfo";

/// One mountinfo line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Unique among the namespace's current mounts; may be reused after an unmount.
    pub id: u64,
    pub parent: u64,
    /// The directory of the mounted filesystem that appears at `mount_point`.
    pub root: PathBuf,
    pub mount_point: PathBuf,
    /// `fuse.SUBTYPE` for a FUSE mount with a subtype.
    pub fstype: String,
    /// Filesystem-specific: a device, or what a FUSE daemon gave as its fsname.
    pub source: OsString,
}

/// The mounts of this process's namespace, in mount order.
pub fn read() -> io::Result<Vec<Entry>> {
    Ok(parse(&std::fs::read_to_string(MOUNTINFO)?))
}

/// The entries of mountinfo `text`. A line that does not have the fields of one is
/// skipped: the table is only read for mounts the caller recognizes.
pub fn parse(text: &str) -> Vec<Entry> {
    text.lines().filter_map(parse_line).collect()
}

/// Fields: id, parent, major:minor, root, mount point, options, zero or more optional
/// fields, "-", fstype, source, superblock options.
fn parse_line(line: &str) -> Option<Entry> {
    let f: Vec<&str> = line.split(' ').collect();
    // The optional fields never read "-", nor do the six before them.
    let sep = 6 + f.get(6..)?.iter().position(|x| *x == "-")?;
    Some(Entry {
        id: f[0].parse().ok()?,
        parent: f[1].parse().ok()?,
        root: unescape(f[3]).into(),
        mount_point: unescape(f[4]).into(),
        fstype: unescape(f.get(sep + 1)?).into_string().ok()?,
        source: unescape(f.get(sep + 2)?),
    })
}

/// A field with the kernel's octal escapes (of space, tab, newline and backslash)
/// undone.
fn unescape(field: &str) -> OsString {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let oct = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], oct) {
            (b'\\', Some(d)) => {
                out.push(d.iter().fold(0u8, |n, c| n.wrapping_mul(8) + (c - b'0')));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    OsString::from_vec(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw";

    #[test]
    fn every_field_of_a_line() {
        let line = "36 35 0:31 /sub /mnt/tier rw,nosuid shared:7 master:1 - fuse.dss-tier \
                    dss-tier:/srv/hdd rw,user_id=0";
        assert_eq!(
            parse(line),
            [Entry {
                id: 36,
                parent: 35,
                root: "/sub".into(),
                mount_point: "/mnt/tier".into(),
                fstype: "fuse.dss-tier".into(),
                source: "dss-tier:/srv/hdd".into(),
            }]
        );
        let e = &parse(ROOT)[0];
        assert_eq!((e.id, e.fstype.as_str()), (22, "ext4"));
    }

    #[test]
    fn a_mount_point_with_a_space() {
        let e = &parse(r"40 22 0:50 / /srv/node/disk\0401 rw - fuse.dss-tier x rw")[0];
        assert_eq!(e.mount_point, PathBuf::from("/srv/node/disk 1"));
    }

    #[test]
    fn a_source_with_a_backslash_tab_and_newline() {
        let e = &parse(r"41 22 0:51 /a\011b /m rw - fuse.dss-tier dss-tier:/h\134dd\012x rw")[0];
        assert_eq!(e.source, OsString::from("dss-tier:/h\\dd\nx"));
        assert_eq!(e.root, PathBuf::from("/a\tb"));
    }

    #[test]
    fn a_backslash_without_three_octal_digits_stays() {
        assert_eq!(unescape(r"a\b\04"), OsString::from(r"a\b\04"));
    }

    #[test]
    fn malformed_lines_are_skipped() {
        let text = [
            ROOT,
            "",
            "23 22 0:5 / /dev rw",
            "x 22 0:5 / /dev rw - devtmpfs udev rw",
            "24 22 0:5 / /dev rw - devtmpfs",
            "25 22 0:6 / /proc rw,nosuid - proc proc rw",
        ]
        .join("\n");
        let ids: Vec<u64> = parse(&text).iter().map(|e| e.id).collect();
        assert_eq!(ids, [22, 25]);
    }
}
