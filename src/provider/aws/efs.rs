//! EFS through the SDK: encrypted file systems keyed by their CreationToken (the provider
//! name), and their mount targets. Absent things are None / false / empty, whichever way EFS
//! says so (404 `FileSystemNotFound`, an empty list, or a `deleted` state).
use aws_sdk_efs::types::{FileSystemDescription, MountTargetDescription, PerformanceMode, ThroughputMode};

use super::{Aws, sdk_code, sdk_error};
use crate::provider::{EfsFileSystem, Lifecycle, MountTarget, ProviderError, ProviderResult, Tag};

/// The name EFS file systems answer to inside a VPC with DNS on (not returned by the API).
pub(super) fn efs_dns_name(file_system_id: &str, region: &str) -> String {
    format!("{file_system_id}.efs.{region}.{}", super::dns_suffix(region))
}

fn file_system_from(description: &FileSystemDescription, region: &str) -> EfsFileSystem {
    EfsFileSystem {
        id: description.file_system_id().to_owned(),
        creation_token: description.creation_token().to_owned(),
        life_cycle_state: Lifecycle::parse(description.life_cycle_state().as_str()),
        number_of_mount_targets: description.number_of_mount_targets(),
        encrypted: description.encrypted().unwrap_or(false),
        dns_name: efs_dns_name(description.file_system_id(), region),
        tags: description.tags().iter().map(|t| Tag::new(t.key(), t.value())).collect(),
    }
}

fn mount_target_from(description: &MountTargetDescription) -> MountTarget {
    MountTarget {
        id: description.mount_target_id().to_owned(),
        file_system_id: description.file_system_id().to_owned(),
        subnet_id: description.subnet_id().to_owned(),
        life_cycle_state: Lifecycle::parse(description.life_cycle_state().as_str()),
        ip_address: description.ip_address().map(str::to_owned),
        availability_zone: description.availability_zone_name().map(str::to_owned),
        vpc_id: description.vpc_id().map(str::to_owned),
    }
}

fn sdk_tags(tags: &[Tag]) -> ProviderResult<Vec<aws_sdk_efs::types::Tag>> {
    tags.iter()
        .map(|t| {
            aws_sdk_efs::types::Tag::builder()
                .key(&t.key)
                .value(&t.value)
                .build()
                .map_err(|e| ProviderError::misconfigured(format!("bad EFS tag {}: {e}", t.key)))
        })
        .collect()
}

/// Gone, or going for good.
fn present(file_system: EfsFileSystem) -> Option<EfsFileSystem> {
    (file_system.life_cycle_state != Lifecycle::Deleted).then_some(file_system)
}

impl Aws {
    pub(super) async fn sdk_efs_create(
        &self,
        region: &str,
        token: &str,
        tags: &[Tag],
    ) -> ProviderResult<EfsFileSystem> {
        crate::provider::fence::before_change().await?;
        let efs = self.regional(region)?.efs;
        let started = std::time::Instant::now();
        let result = efs
            .create_file_system()
            .creation_token(token)
            .encrypted(true)
            .performance_mode(PerformanceMode::GeneralPurpose)
            .throughput_mode(ThroughputMode::Elastic)
            .set_tags(Some(sdk_tags(tags)?))
            .send()
            .await;
        self.count("efs", "CreateFileSystem", status_word(&result), started);
        match result {
            Ok(created) => {
                let id = created.file_system_id().to_owned();
                Ok(EfsFileSystem {
                    id: id.clone(),
                    creation_token: created.creation_token().to_owned(),
                    life_cycle_state: Lifecycle::parse(created.life_cycle_state().as_str()),
                    number_of_mount_targets: created.number_of_mount_targets(),
                    encrypted: created.encrypted().unwrap_or(false),
                    dns_name: efs_dns_name(&id, region),
                    tags: created.tags().iter().map(|t| Tag::new(t.key(), t.value())).collect(),
                })
            }
            Err(err) => {
                let mut mapped = sdk_error(&err, true);
                // The holder's id travels in the error: say it, for the caller's look-up.
                if let Some(aws_sdk_efs::operation::create_file_system::CreateFileSystemError::FileSystemAlreadyExists(
                    e,
                )) = err.as_service_error()
                    && let ProviderError::Refused { message, .. } = &mut mapped
                {
                    message.push_str(&format!(" (file system {})", e.file_system_id()));
                }
                Err(mapped)
            }
        }
    }

    pub(super) async fn sdk_efs_get(&self, region: &str, id: &str) -> ProviderResult<Option<EfsFileSystem>> {
        let efs = self.regional(region)?.efs;
        let started = std::time::Instant::now();
        let result = efs.describe_file_systems().file_system_id(id).send().await;
        self.count("efs", "DescribeFileSystems", status_word(&result), started);
        match result {
            Ok(answer) => Ok(answer
                .file_systems()
                .iter()
                .find(|f| f.file_system_id() == id)
                .map(|f| file_system_from(f, region))
                .and_then(present)),
            Err(err) if sdk_code(&err) == Some("FileSystemNotFound") => Ok(None),
            Err(err) => Err(sdk_error(&err, false)),
        }
    }

    /// Every page, asked 100 at a time (EFS pages at 100 whatever more is asked).
    pub(super) async fn sdk_efs_list(&self, region: &str) -> ProviderResult<Vec<EfsFileSystem>> {
        let efs = self.regional(region)?.efs;
        let mut found = Vec::new();
        let mut marker: Option<String> = None;
        loop {
            let started = std::time::Instant::now();
            let result = efs.describe_file_systems().max_items(100).set_marker(marker.clone()).send().await;
            self.count("efs", "DescribeFileSystems", status_word(&result), started);
            let answer = result.map_err(|err| sdk_error(&err, false))?;
            found.extend(answer.file_systems().iter().map(|f| file_system_from(f, region)).filter_map(present));
            marker = answer.next_marker().filter(|m| !m.is_empty()).map(str::to_owned);
            if marker.is_none() {
                return Ok(found);
            }
        }
    }

    pub(super) async fn sdk_efs_find_by_token(
        &self,
        region: &str,
        token: &str,
    ) -> ProviderResult<Option<EfsFileSystem>> {
        let efs = self.regional(region)?.efs;
        let started = std::time::Instant::now();
        let result = efs.describe_file_systems().creation_token(token).send().await;
        self.count("efs", "DescribeFileSystems", status_word(&result), started);
        match result {
            Ok(answer) => Ok(answer
                .file_systems()
                .iter()
                .find(|f| f.creation_token() == token)
                .map(|f| file_system_from(f, region))
                .and_then(present)),
            Err(err) if sdk_code(&err) == Some("FileSystemNotFound") => Ok(None),
            Err(err) => Err(sdk_error(&err, false)),
        }
    }

    pub(super) async fn sdk_efs_delete(&self, region: &str, id: &str) -> ProviderResult<bool> {
        crate::provider::fence::before_change().await?;
        let efs = self.regional(region)?.efs;
        let started = std::time::Instant::now();
        let result = efs.delete_file_system().file_system_id(id).send().await;
        self.count("efs", "DeleteFileSystem", status_word(&result), started);
        match result {
            Ok(_) => Ok(true),
            Err(err) if sdk_code(&err) == Some("FileSystemNotFound") => Ok(false),
            // A delete repeated is harmless: a lost answer is retry-later, not unknown.
            Err(err) => Err(sdk_error(&err, false)),
        }
    }

    pub(super) async fn sdk_mount_target_create(
        &self,
        region: &str,
        file_system_id: &str,
        subnet_id: &str,
        security_group_ids: &[String],
    ) -> ProviderResult<MountTarget> {
        crate::provider::fence::before_change().await?;
        let efs = self.regional(region)?.efs;
        let started = std::time::Instant::now();
        let result = efs
            .create_mount_target()
            .file_system_id(file_system_id)
            .subnet_id(subnet_id)
            .set_security_groups(Some(security_group_ids.to_vec()))
            .send()
            .await;
        self.count("efs", "CreateMountTarget", status_word(&result), started);
        match result {
            Ok(created) => Ok(MountTarget {
                id: created.mount_target_id().to_owned(),
                file_system_id: created.file_system_id().to_owned(),
                subnet_id: created.subnet_id().to_owned(),
                life_cycle_state: Lifecycle::parse(created.life_cycle_state().as_str()),
                ip_address: created.ip_address().map(str::to_owned),
                availability_zone: created.availability_zone_name().map(str::to_owned),
                vpc_id: created.vpc_id().map(str::to_owned),
            }),
            Err(err) => Err(sdk_error(&err, true)),
        }
    }

    pub(super) async fn sdk_mount_targets_of(
        &self,
        region: &str,
        file_system_id: &str,
    ) -> ProviderResult<Vec<MountTarget>> {
        let efs = self.regional(region)?.efs;
        let mut found = Vec::new();
        let mut marker: Option<String> = None;
        loop {
            let started = std::time::Instant::now();
            let result =
                efs.describe_mount_targets().file_system_id(file_system_id).set_marker(marker.clone()).send().await;
            self.count("efs", "DescribeMountTargets", status_word(&result), started);
            let answer = match result {
                Ok(answer) => answer,
                Err(err) if sdk_code(&err) == Some("FileSystemNotFound") => return Ok(Vec::new()),
                Err(err) => return Err(sdk_error(&err, false)),
            };
            found.extend(answer.mount_targets().iter().map(mount_target_from));
            marker = answer.next_marker().filter(|m| !m.is_empty()).map(str::to_owned);
            if marker.is_none() {
                return Ok(found);
            }
        }
    }

    pub(super) async fn sdk_mount_target_delete(&self, region: &str, mount_target_id: &str) -> ProviderResult<bool> {
        crate::provider::fence::before_change().await?;
        let efs = self.regional(region)?.efs;
        let started = std::time::Instant::now();
        let result = efs.delete_mount_target().mount_target_id(mount_target_id).send().await;
        self.count("efs", "DeleteMountTarget", status_word(&result), started);
        match result {
            Ok(_) => Ok(true),
            Err(err) if sdk_code(&err) == Some("MountTargetNotFound") => Ok(false),
            Err(err) => Err(sdk_error(&err, false)),
        }
    }
}

/// How a call ended, for the calls metric.
pub(super) fn status_word<T, E>(
    result: &Result<T, aws_sdk_efs::error::SdkError<E, aws_sdk_efs::config::http::HttpResponse>>,
) -> &'static str {
    use aws_sdk_efs::error::SdkError;
    match result {
        Ok(_) => "ok",
        Err(SdkError::ServiceError(_)) => "refused",
        Err(SdkError::TimeoutError(_)) => "timeout",
        Err(_) => "transport",
    }
}
