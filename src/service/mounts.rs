//! `sharedVolumeMount`: the lines that mount a shared volume's NFS source in a guest, for the
//! `mounts:` list of cloud-config user data and for `/etc/fstab`. `_netdev` waits for the network
//! and `nofail` lets the guest boot while the share is unreachable.
use serde_json::json;

use crate::error::{Error, Result};

/// Directories a mount may not cover, nor sit inside (`/home` too: a mount there would hide the
/// users' keys and lock them out).
const SYSTEM_PATHS: &[&str] = &[
    "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/root", "/run", "/sbin",
    "/snap", "/sys", "/usr", "/var", "/tmp",
];

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountLines {
    /// One entry of cloud-config's `mounts:`: source, path, type, options, dump, pass.
    pub cloud_config: Vec<String>,
    pub fstab: String,
}

/// The filesystem type a shared volume is mounted as.
pub const SHARED_VOLUME_TYPE: &str = "nfs4";

pub fn shared_volume_mount(source: &str, path: &str, read_only: bool) -> Result<MountLines> {
    check_source(source)?;
    check_mount_path(path)?;
    let options = if read_only { "ro,_netdev,nofail" } else { "defaults,_netdev,nofail" };
    let cloud_config = [source, path, SHARED_VOLUME_TYPE, options, "0", "0"].map(str::to_owned).to_vec();
    let fstab = cloud_config.join(" ");
    Ok(MountLines { cloud_config, fstab })
}

/// `<host>:<absolute path>`, with no whitespace (an fstab field).
fn check_source(source: &str) -> Result<()> {
    let well_formed = source.split_once(':').is_some_and(|(host, export)| {
        !host.is_empty()
            && host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '[' | ']'))
            && export.starts_with('/')
    });
    if !well_formed || source.chars().any(char::is_whitespace) {
        return Err(Error::invalid_input("source", format!("{source:?} is not an NFS source <host>:<absolute path>")));
    }
    Ok(())
}

/// An absolute path of plain segments, outside the system's directories.
pub fn check_mount_path(path: &str) -> Result<()> {
    let refuse = |why: &str| {
        Err(Error::invalid_input("path", format!("mount path {path:?} {why}")).with_details(json!({ "field": "path" })))
    };
    if !path.starts_with('/') {
        return refuse("is not absolute");
    }
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    if segments.iter().any(|s| *s == "." || *s == "..") {
        return refuse("has . or .. segments");
    }
    if segments.iter().any(|s| s.is_empty() || s.chars().any(|c| c.is_whitespace() || c.is_control())) {
        return refuse("has an empty segment or whitespace");
    }
    let covers_system = SYSTEM_PATHS.iter().any(|system| path == *system || path.starts_with(&format!("{system}/")));
    if covers_system {
        return refuse("would cover part of the system");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_volume_mount_makes_cloud_config_and_fstab_lines() {
        let lines = shared_volume_mount("10.110.0.5:/2633050/abc", "/mnt/assets", false).unwrap();
        assert_eq!(
            lines.cloud_config,
            ["10.110.0.5:/2633050/abc", "/mnt/assets", "nfs4", "defaults,_netdev,nofail", "0", "0"]
        );
        assert_eq!(lines.fstab, "10.110.0.5:/2633050/abc /mnt/assets nfs4 defaults,_netdev,nofail 0 0");
        let ro = shared_volume_mount("10.110.0.5:/2633050/abc", "/mnt/assets", true).unwrap();
        assert_eq!(ro.cloud_config[3], "ro,_netdev,nofail");
    }

    #[test]
    fn shared_volume_mount_refuses_bad_sources_and_paths() {
        for source in ["10.0.0.1", "10.0.0.1:relative", ":/x", "host :/x", "a b:/x"] {
            assert!(shared_volume_mount(source, "/mnt/x", false).is_err(), "{source}");
        }
        for path in ["mnt/x", "/mnt/../etc", "/mnt/./x", "/", "/etc", "/usr/local", "/var/lib/x", "/mnt//x", "/mnt/x/"]
        {
            assert!(shared_volume_mount("10.0.0.1:/x", path, false).is_err(), "{path}");
        }
        assert!(shared_volume_mount("nfs.example:/exports/a", "/srv/data", false).is_ok());
    }
}
