//! End to end through the kernel: mount, file I/O, stats, fsync durability, unmount.
//! Skipped (passes vacuously, with a note) where FUSE is not available.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_dss-tier");
const POLICY: &str = concat!(env!("DSS_POLICIES_DIR"), "/reference.toml");

fn fuse_available() -> bool {
    Path::new("/dev/fuse").exists()
        && Command::new("fusermount3")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success())
}

struct Mounted(std::path::PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new(BIN).arg("umount").arg(&self.0).status();
    }
}

#[test]
fn mount_write_read_stats_unmount() {
    if !fuse_available() {
        eprintln!("skipped: no /dev/fuse or fusermount3");
        return;
    }
    let base = std::env::temp_dir().join(format!("dss-tier-test-{}", std::process::id()));
    let _ = fs::remove_dir_all(&base);
    let (ssd, hdd, mnt) = (base.join("ssd"), base.join("hdd"), base.join("mnt"));
    for d in [&ssd, &hdd, &mnt] {
        fs::create_dir_all(d).unwrap();
    }
    let st = Command::new(BIN)
        .args(["mount", "--ssd"])
        .arg(&ssd)
        .arg("--hdd")
        .arg(&hdd)
        .args(["--cache-size", "256KiB", "--policy", POLICY, "--daemon"])
        .arg(&mnt)
        .status()
        .unwrap();
    assert!(st.success());
    let guard = Mounted(mnt.clone());
    let info = fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(
        info.lines()
            .any(|l| l.contains(" - fuse.dss-tier ") && l.contains(mnt.to_str().unwrap()))
    );

    // More data than the cache holds, with a pattern that catches misplaced blocks.
    let data: Vec<u8> = (0..1_000_003u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    fs::create_dir(mnt.join("objects")).unwrap();
    fs::write(mnt.join("objects/a.data"), &data).unwrap();
    assert_eq!(fs::read(mnt.join("objects/a.data")).unwrap(), data);

    let mut f = fs::File::create(mnt.join("small")).unwrap();
    f.write_all(b"acknowledged").unwrap();
    f.sync_all().unwrap();
    drop(f);
    assert!(
        fs::read(hdd.join(".dss-tier/anchors")).map(|_| ()).is_err(),
        "the anchor directory is a directory"
    );
    assert!(
        !fs::read_dir(&mnt)
            .unwrap()
            .any(|e| e.unwrap().file_name() == ".dss-tier"),
        "the tier's own directory is hidden"
    );

    fs::rename(mnt.join("objects/a.data"), mnt.join("objects/b.data")).unwrap();
    assert_eq!(fs::read(mnt.join("objects/b.data")).unwrap(), data);

    let out = Command::new(BIN)
        .args(["stats", "--json"])
        .arg(&mnt)
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["mode"], "dss");
    let classes = v["classes"].as_object().unwrap();
    assert!(
        classes
            .values()
            .any(|c| c["cached_bytes"].as_u64().unwrap() > 0)
    );
    assert!(v["devices"]["hdd"]["ops"].as_u64().unwrap() > 0);
    assert!(v["devices"]["ssd"]["bytes"].as_u64().unwrap() > 0);

    let pid = v["pid"].as_u64().unwrap();
    // `umount` returns once the daemon has written back and exited.
    let st = Command::new(BIN).arg("umount").arg(&mnt).status().unwrap();
    assert!(st.success());
    std::mem::forget(guard);
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists()
            || fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z")),
        "the daemon has exited"
    );
    assert!(
        !fs::read_to_string("/proc/self/mountinfo")
            .unwrap()
            .contains(mnt.to_str().unwrap())
    );
    assert_eq!(fs::read(hdd.join("small")).unwrap(), b"acknowledged");
    assert_eq!(
        fs::read(hdd.join("objects/b.data")).unwrap(),
        data,
        "unmount writes everything back"
    );
    let _ = fs::remove_dir_all(&base);
}
