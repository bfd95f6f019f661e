//! Droplets (create, read, delete) and the tags that mark them.
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use super::{DigitalOcean, id_text, required, strings, unreadable};
use crate::provider::{Droplet, DropletCreate, DropletStatus, ProviderError, ProviderResult};

fn droplet_from(body: &Value) -> ProviderResult<Droplet> {
    if body.get("id").is_none() {
        return Err(ProviderError::Unknown { message: "unreadable Droplet from DigitalOcean".into() });
    }
    Ok(Droplet {
        id: id_text(&body["id"]),
        name: required(body, "name", "Droplet")?,
        status: DropletStatus::parse(&required(body, "status", "Droplet")?)
            .ok_or_else(|| unreadable(&format!("Droplet status {}", body["status"])))?,
        region: required(&body["region"], "slug", "Droplet region")?,
        vpc_id: body["vpc_uuid"].as_str().filter(|v| !v.is_empty()).map(str::to_owned),
        volume_ids: strings(&body["volume_ids"]),
        tags: strings(&body["tags"]),
    })
}

/// Machines, and the tags that mark them.
impl DigitalOcean {
    pub async fn droplet_create(&self, request: &DropletCreate<'_>) -> ProviderResult<Droplet> {
        let mut body = json!({
            "name": request.name, "region": request.region, "size": request.size, "image": request.image,
            "tags": request.tags,
        });
        // Without a network the field is left out (the spec has no null for it): the region's
        // default VPC.
        if let Some(vpc_id) = request.vpc_id {
            body["vpc_uuid"] = json!(vpc_id);
        }
        if let Some(user_data) = request.user_data {
            body["user_data"] = json!(user_data);
        }
        let answer = self.call("droplets.create", Method::POST, "/v2/droplets", Some(body)).await?;
        droplet_from(&answer.body["droplet"])
    }

    pub async fn droplet_get(&self, id: &str) -> ProviderResult<Option<Droplet>> {
        let answer = self.call("droplets.get", Method::GET, &format!("/v2/droplets/{id}"), None).await?;
        if answer.status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        droplet_from(&answer.body["droplet"]).map(Some)
    }

    pub async fn droplet_find_by_name(&self, name: &str) -> ProviderResult<Option<Droplet>> {
        let found = self.list_all("droplets.list", &format!("/v2/droplets?name={name}"), "droplets").await?;
        found.iter().find(|d| d["name"] == name).map(droplet_from).transpose()
    }

    /// False when it was already gone.
    pub async fn droplet_delete(&self, id: &str) -> ProviderResult<bool> {
        let answer = self.call("droplets.delete", Method::DELETE, &format!("/v2/droplets/{id}"), None).await?;
        Ok(answer.status != StatusCode::NOT_FOUND)
    }

    /// Deletes the Droplet with exactly the volumes named (a selective destroy: what is not
    /// named is kept); false when the Droplet was already gone.
    pub async fn droplet_destroy_with_volumes(&self, id: &str, volume_ids: &[String]) -> ProviderResult<bool> {
        // Only the volumes named: never the snapshots, reserved IPs or anything a tag would reach.
        let body = json!({ "volumes": volume_ids, "volume_snapshots": [], "reserved_ips": [], "snapshots": [] });
        let path = format!("/v2/droplets/{id}/destroy_with_associated_resources/selective");
        let answer = self.call("droplets.destroy.selective", Method::DELETE, &path, Some(body)).await?;
        Ok(answer.status != StatusCode::NOT_FOUND)
    }

    pub async fn droplets_tagged(&self, tag: &str) -> ProviderResult<Vec<Droplet>> {
        let found = self.list_all("droplets.list", &format!("/v2/droplets?tag_name={tag}"), "droplets").await?;
        found.iter().map(droplet_from).collect()
    }

    /// Tags (`on`) or untags Droplets, all in one call; tagging makes the tag first.
    pub async fn tag_droplets(&self, tag: &str, droplet_ids: &[String], on: bool) -> ProviderResult<()> {
        if droplet_ids.is_empty() {
            return Ok(());
        }
        let resources: Vec<Value> =
            droplet_ids.iter().map(|id| json!({ "resource_id": id, "resource_type": "droplet" })).collect();
        let resources = json!({ "resources": resources });
        if !on {
            // A tag already gone (a 404) has nothing left to take off.
            self.call("tags.resources.delete", Method::DELETE, &format!("/v2/tags/{tag}/resources"), Some(resources))
                .await?;
            return Ok(());
        }
        // Tagging with a tag that does not exist is a 404: make it first (making one that
        // exists succeeds).
        self.call("tags.create", Method::POST, "/v2/tags", Some(json!({ "name": tag }))).await?;
        let answer = self
            .call("tags.resources.create", Method::POST, &format!("/v2/tags/{tag}/resources"), Some(resources))
            .await?;
        if answer.status == StatusCode::NOT_FOUND {
            let ids = droplet_ids.join(", ");
            return Err(ProviderError::refused(404, format!("a Droplet of {ids} is gone")));
        }
        Ok(())
    }

    pub async fn tag_delete(&self, tag: &str) -> ProviderResult<()> {
        self.call("tags.delete", Method::DELETE, &format!("/v2/tags/{tag}"), None).await.map(drop)
    }
}
