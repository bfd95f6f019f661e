//! The user data an instance boots with: the mounts of its filesystems first, then the tenant's
//! own part. With filesystems, it is a MIME multipart that cloud-init runs in order: a shell
//! script that writes each mount to `/etc/fstab` with `nofail` (so a missing filesystem never
//! blocks a boot, now or on any later boot) and mounts it, then the tenant's part unchanged.
//! Also how a machine mounts a filesystem (`Mount`, part of the filesystem's view). Not a
//! service: the instance calls check the user data with it, the instance reconciler makes
//! machines with it.
use sea_orm::ConnectionTrait;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::store::entity::{filesystem, instance};
use crate::store::state::{FilesystemKind, State};

/// EC2's limit on user data, before base64.
pub const MAX_USER_DATA_BYTES: usize = 16 * 1024;

/// How a machine mounts a ready filesystem: DNS names and mount names, never a secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mount {
    pub fstype: String,
    pub source: String,
    pub options: String,
}

/// The mount of a ready filesystem, from the names the provider gave it. The options are what
/// AWS recommends for each client, with `_netdev` so a mount waits for the network.
pub fn mount(f: &filesystem::Model) -> Option<Mount> {
    if f.state != State::Ready {
        return None;
    }
    // The provider's names go into a boot script and /etc/fstab: only a host name and a plain
    // mount name are taken.
    let host = |d: &&str| !d.is_empty() && d.chars().all(|c| c.is_ascii_alphanumeric() || ".-".contains(c));
    let plain = |m: &&str| !m.is_empty() && m.chars().all(|c| c.is_ascii_alphanumeric());
    let dns = f.dns_name.as_deref().filter(host)?;
    Some(match f.kind {
        FilesystemKind::Lustre => Mount {
            fstype: "lustre".into(),
            source: format!("{dns}@tcp:/{}", f.mount_name.as_deref().filter(plain)?),
            options: "relatime,flock,_netdev".into(),
        },
        _ => Mount {
            fstype: "nfs4".into(),
            source: format!("{dns}:/"),
            options: "nfsvers=4.1,rsize=1048576,wsize=1048576,hard,timeo=600,retrans=2,noresvport,_netdev".into(),
        },
    })
}

/// One filesystem to mount at `path`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BootMount {
    pub mount: Mount,
    pub path: String,
}

/// The user data of a machine with `mounts`, before `tenant`'s own part (None: no user data).
/// Paths are plain segments (checked at create), so they need no quoting beyond the script's.
pub fn user_data(mounts: &[BootMount], tenant: Option<&str>) -> Option<String> {
    if mounts.is_empty() {
        return tenant.map(str::to_owned);
    }
    let script = mount_script(mounts);
    let Some(tenant) = tenant else { return Some(script) };
    let boundary = boundary(tenant);
    let mut out = format!("Content-Type: multipart/mixed; boundary=\"{boundary}\"\nMIME-Version: 1.0\n\n");
    out.push_str(&format!(
        "--{boundary}\nContent-Type: text/x-shellscript; charset=\"utf-8\"\n\
         Content-Disposition: attachment; filename=\"00-vps-graph-mounts.sh\"\n\n{script}"
    ));
    out.push_str(&format!("--{boundary}\n{}\n", tenant_part(tenant)));
    out.push_str(&format!("--{boundary}--\n"));
    Some(out)
}

/// A MIME boundary the tenant's part does not contain. It depends on nothing but that part, so
/// the same instance renders the same user data every time (EC2 refuses a retried RunInstances
/// whose client token comes with other parameters).
fn boundary(tenant: &str) -> String {
    (0u32..).map(|n| format!("vps-graph-boot-{n}")).find(|b| !tenant.contains(b.as_str())).unwrap_or_default()
}

fn mount_script(mounts: &[BootMount]) -> String {
    let mut script = String::from(
        "#!/bin/sh\n# vps-graph: the network's filesystems, before the tenant's own part. nofail: a filesystem\n\
         # that is missing never blocks a boot.\n",
    );
    for m in mounts {
        let line = format!("{} {} {} {},nofail 0 0", m.mount.source, m.path, m.mount.fstype, m.mount.options);
        let (path, entry) = (quoted(&m.path), quoted(&format!(" {} ", m.path)));
        script.push_str(&format!(
            "mkdir -p {path}\ngrep -qsF {entry} /etc/fstab || echo {line} >> /etc/fstab\n\
             mount {path} || echo {warning} >&2\n",
            line = quoted(&line),
            warning = quoted(&format!("vps-graph: {} is not mounted yet", m.path)),
        ));
    }
    script
}

/// `text` as one shell word: single-quoted, with any single quote in it closed, escaped and
/// reopened. Paths are plain segments and mount sources provider names, but the script runs as
/// root, so nothing in it is left to the shell.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The tenant's part with the MIME type cloud-init knows it by; one that is MIME already is a
/// part as it stands.
fn tenant_part(tenant: &str) -> String {
    if tenant.to_ascii_lowercase().starts_with("content-type:") {
        return tenant.to_owned();
    }
    let first = tenant.lines().next().unwrap_or_default();
    // Longer headers before the ones they start with; what cloud-init would not run on its own
    // (no known header) stays unrun, as plain text.
    let kind = [
        ("#cloud-config-archive", "text/cloud-config-archive"),
        ("#cloud-config-jsonp", "text/cloud-config-jsonp"),
        ("#cloud-config", "text/cloud-config"),
        ("#cloud-boothook", "text/cloud-boothook"),
        ("#include-once", "text/x-include-once-url"),
        ("#include", "text/x-include-url"),
        ("#part-handler", "text/part-handler"),
        ("## template: jinja", "text/jinja2"),
        ("#!", "text/x-shellscript"),
    ]
    .iter()
    .find(|(start, _)| first.starts_with(start))
    .map_or("text/plain", |(_, kind)| kind);
    format!(
        "Content-Type: {kind}; charset=\"utf-8\"\nContent-Disposition: attachment; filename=\"50-tenant\"\n\n{tenant}"
    )
}

/// The mounts of an instance's filesystems in the order asked, for those that are ready.
pub async fn mounts_of(conn: &impl ConnectionTrait, instance_id: &str) -> Result<Vec<BootMount>> {
    let asked = crate::store::instances::mounts_asked(conn, instance_id).await?;
    let ids: Vec<String> = asked.iter().map(|m| m.filesystem_id.clone()).collect();
    let found = crate::store::filesystems::find_many(conn, ids).await?;
    Ok(asked
        .iter()
        .filter_map(|m| {
            let f = found.iter().find(|f| f.id == m.filesystem_id)?;
            Some(BootMount { mount: mount(f)?, path: m.path.clone() })
        })
        .collect())
}

/// The user data the instance's machine is made with.
pub async fn instance_user_data(conn: &impl ConnectionTrait, i: &instance::Model) -> Result<Option<String>> {
    Ok(user_data(&mounts_of(conn, &i.id).await?, i.user_data.as_deref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn efs(path: &str) -> BootMount {
        BootMount {
            mount: Mount {
                fstype: "nfs4".into(),
                source: "fs-1.efs.us-east-1.amazonaws.com:/".into(),
                options: "nfsvers=4.1,_netdev".into(),
            },
            path: path.into(),
        }
    }

    #[test]
    fn without_mounts_the_tenants_user_data_is_unchanged() {
        assert_eq!(user_data(&[], None), None);
        assert_eq!(user_data(&[], Some("#!/bin/sh\necho hi\n")).as_deref(), Some("#!/bin/sh\necho hi\n"));
    }

    #[test]
    fn mounts_alone_are_one_script_with_nofail() {
        let data = user_data(&[efs("/data")], None).unwrap();
        assert!(data.starts_with("#!/bin/sh\n"), "{data}");
        assert!(
            data.contains(
                "echo 'fs-1.efs.us-east-1.amazonaws.com:/ /data nfs4 nfsvers=4.1,_netdev,nofail 0 0' >> /etc/fstab"
            ),
            "{data}"
        );
        assert!(data.contains("mkdir -p '/data'"));
        assert!(data.contains("grep -qsF ' /data ' /etc/fstab"), "a fixed string, not a pattern: {data}");
        assert!(data.contains("mount '/data' ||"), "a failed mount never fails the script");
    }

    #[test]
    fn the_mounts_come_before_the_tenants_own_part() {
        let tenant = "#cloud-config\npackages: [lustre-client]\n";
        let data = user_data(&[efs("/data"), efs("/scratch")], Some(tenant)).unwrap();
        let mounts = data.find("00-vps-graph-mounts.sh").unwrap();
        let own = data.find("Content-Type: text/cloud-config").unwrap();
        assert!(mounts < own, "{data}");
        assert!(data.find("'/data'").unwrap() < data.find("'/scratch'").unwrap(), "in the order asked");
        assert!(data.contains(tenant));
        assert!(data.trim_end().ends_with("--vps-graph-boot-0--"));
        assert_eq!(
            user_data(&[efs("/data")], Some(tenant)),
            user_data(&[efs("/data")], Some(tenant)),
            "the same every time"
        );
    }

    #[test]
    fn the_boundary_is_never_in_the_tenants_part() {
        let tenant = "#!/bin/sh\necho --vps-graph-boot-0\n";
        let data = user_data(&[efs("/data")], Some(tenant)).unwrap();
        assert!(data.contains("boundary=\"vps-graph-boot-1\""), "{data}");
    }

    #[test]
    fn nothing_in_the_script_is_left_to_the_shell() {
        assert_eq!(quoted("/data"), "'/data'");
        assert_eq!(quoted("a'b"), r"'a'\''b'");
        let mut odd = efs("/data");
        odd.mount.source = "x';reboot;'.example:/".into();
        let data = user_data(&[odd], None).unwrap();
        assert!(data.contains(r"echo 'x'\'';reboot;'\''.example:/ /data"), "{data}");
    }

    #[test]
    fn the_tenants_part_keeps_its_kind() {
        assert!(tenant_part("#!/bin/bash\necho").starts_with("Content-Type: text/x-shellscript"));
        assert!(tenant_part("#cloud-boothook\n").starts_with("Content-Type: text/cloud-boothook"));
        assert!(tenant_part("#cloud-config-archive\n- a").starts_with("Content-Type: text/cloud-config-archive"));
        assert!(tenant_part("#include-once\nhttp://x").starts_with("Content-Type: text/x-include-once-url"));
        assert!(tenant_part("just words").starts_with("Content-Type: text/plain"), "never run as a script");
        let mime = "Content-Type: multipart/mixed; boundary=x\n\n--x--\n";
        assert_eq!(tenant_part(mime), mime, "a MIME document is a part as it is");
    }
}
