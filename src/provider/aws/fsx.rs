//! FSx for Lustre through the SDK: create with a client request token (the provider name),
//! read by id, find by `Name` tag (FSx has no filter: every page is listed), delete without a
//! final backup. `FileSystemNotFound` (a 400 at FSx) means absent.
use aws_sdk_fsx::types::{
    CreateFileSystemLustreConfiguration, DeleteFileSystemLustreConfiguration, FileSystem, FileSystemType,
    LustreDeploymentType,
};

use super::efs::status_word;
use super::{Aws, sdk_code, sdk_error};
use crate::provider::{Lifecycle, LustreCreate, LustreDeployment, LustreFileSystem, ProviderResult, Tag, tag_value};

fn lustre_from(file_system: &FileSystem) -> LustreFileSystem {
    let lustre = file_system.lustre_configuration();
    LustreFileSystem {
        id: file_system.file_system_id().unwrap_or_default().to_owned(),
        lifecycle: file_system.lifecycle().map_or(Lifecycle::Unknown, |l| Lifecycle::parse(l.as_str())),
        dns_name: file_system.dns_name().map(str::to_owned),
        mount_name: lustre.and_then(|l| l.mount_name()).map(str::to_owned),
        storage_capacity_gib: file_system.storage_capacity().unwrap_or_default(),
        deployment_type: lustre.and_then(|l| l.deployment_type()).map(|d| d.as_str().to_owned()),
        subnet_ids: file_system.subnet_ids().to_vec(),
        vpc_id: file_system.vpc_id().map(str::to_owned),
        failure_message: file_system.failure_details().and_then(|f| f.message()).map(str::to_owned),
        tags: file_system
            .tags()
            .iter()
            .map(|t| Tag::new(t.key().unwrap_or_default(), t.value().unwrap_or_default()))
            .collect(),
    }
}

fn lustre_configuration(deployment: LustreDeployment) -> CreateFileSystemLustreConfiguration {
    let builder = CreateFileSystemLustreConfiguration::builder();
    match deployment {
        LustreDeployment::Scratch2 => builder.deployment_type(LustreDeploymentType::Scratch2),
        LustreDeployment::Persistent2 { per_unit_storage_throughput } => builder
            .deployment_type(LustreDeploymentType::Persistent2)
            .per_unit_storage_throughput(per_unit_storage_throughput),
    }
    .build()
}

impl Aws {
    pub(super) async fn sdk_lustre_create(
        &self,
        region: &str,
        request: &LustreCreate<'_>,
    ) -> ProviderResult<LustreFileSystem> {
        crate::provider::fence::before_change().await?;
        let fsx = self.regional(region)?.fsx;
        let tags = request.tags.iter().map(|t| aws_sdk_fsx::types::Tag::builder().key(&t.key).value(&t.value).build());
        let started = std::time::Instant::now();
        let result = fsx
            .create_file_system()
            .client_request_token(request.client_request_token)
            .file_system_type(FileSystemType::Lustre)
            .storage_capacity(request.storage_capacity_gib)
            .subnet_ids(request.subnet_id)
            .set_security_group_ids(Some(request.security_group_ids.to_vec()))
            .set_tags(Some(tags.collect()))
            .lustre_configuration(lustre_configuration(request.deployment))
            .send()
            .await;
        self.count("fsx", "CreateFileSystem", status_word(&result), started);
        match result {
            Ok(answer) => answer.file_system().map(lustre_from).filter(|f| !f.id.is_empty()).ok_or_else(|| {
                crate::provider::ProviderError::Unknown { message: "AWS: no file system in the FSx answer".into() }
            }),
            Err(err) => Err(sdk_error(&err, true)),
        }
    }

    pub(super) async fn sdk_lustre_get(&self, region: &str, id: &str) -> ProviderResult<Option<LustreFileSystem>> {
        let fsx = self.regional(region)?.fsx;
        let started = std::time::Instant::now();
        let result = fsx.describe_file_systems().file_system_ids(id).send().await;
        self.count("fsx", "DescribeFileSystems", status_word(&result), started);
        match result {
            Ok(answer) => Ok(answer.file_systems().iter().map(lustre_from).find(|f| f.id == id)),
            Err(err) if sdk_code(&err) == Some("FileSystemNotFound") => Ok(None),
            Err(err) => Err(sdk_error(&err, false)),
        }
    }

    pub(super) async fn sdk_lustre_find_by_name(
        &self,
        region: &str,
        name: &str,
    ) -> ProviderResult<Vec<LustreFileSystem>> {
        let all = self.sdk_lustre_list(region).await?;
        Ok(all.into_iter().filter(|f| tag_value(&f.tags, "Name") == Some(name)).collect())
    }

    /// Every page FSx gives (it has no filter, and sizes its pages itself).
    pub(super) async fn sdk_lustre_list(&self, region: &str) -> ProviderResult<Vec<LustreFileSystem>> {
        let fsx = self.regional(region)?.fsx;
        let mut found = Vec::new();
        let mut next: Option<String> = None;
        loop {
            let started = std::time::Instant::now();
            let result = fsx.describe_file_systems().set_next_token(next.clone()).send().await;
            self.count("fsx", "DescribeFileSystems", status_word(&result), started);
            let answer = result.map_err(|err| sdk_error(&err, false))?;
            found.extend(
                answer
                    .file_systems()
                    .iter()
                    .filter(|f| f.file_system_type() == Some(&FileSystemType::Lustre))
                    .map(lustre_from),
            );
            next = answer.next_token().filter(|t| !t.is_empty()).map(str::to_owned);
            if next.is_none() {
                return Ok(found);
            }
        }
    }

    pub(super) async fn sdk_lustre_delete(&self, region: &str, id: &str) -> ProviderResult<bool> {
        crate::provider::fence::before_change().await?;
        let fsx = self.regional(region)?.fsx;
        let started = std::time::Instant::now();
        let result = fsx
            .delete_file_system()
            .file_system_id(id)
            .lustre_configuration(DeleteFileSystemLustreConfiguration::builder().skip_final_backup(true).build())
            .send()
            .await;
        self.count("fsx", "DeleteFileSystem", status_word(&result), started);
        match result {
            Ok(_) => Ok(true),
            Err(err) if sdk_code(&err) == Some("FileSystemNotFound") => Ok(false),
            Err(err) => Err(sdk_error(&err, false)),
        }
    }
}
