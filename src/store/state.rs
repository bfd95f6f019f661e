//! The states and kinds every resource row is stored with: enums, each stored as the lowercase
//! word it always was (no data migration), written to events as that word, and shown in GraphQL
//! as the upper-case name. Nothing outside `store` compares them as strings.
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// Declares one stored enum: `Variant = "word"` is the word in the column and in event JSON.
macro_rules! stored_enum {
    ($(#[$meta:meta])* $name:ident as $graphql:tt { $($(#[$doc:meta])* $variant:ident = $word:tt,)+ }) => {
        $(#[$meta])*
        #[derive(
            Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
            async_graphql::Enum,
        )]
        #[sea_orm(rs_type = "String", db_type = "Text")]
        #[graphql(name = $graphql)]
        pub enum $name {
            $($(#[$doc])* #[sea_orm(string_value = $word)] #[serde(rename = $word)] $variant,)+
        }

        impl $name {
            /// The stored word.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $word,)+ }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// What a column a narrowed read did not select holds (`store::columns`): a placeholder that
/// nothing shows, never a value a row is given.
macro_rules! placeholder {
    ($($name:ident = $variant:ident),+) => {
        $(impl Default for $name {
            fn default() -> Self {
                $name::$variant
            }
        })+
    };
}

stored_enum! {
    /// Whether a snapshot schedule still takes snapshots.
    ScheduleState as "SnapshotScheduleState" {
        Active = "active",
        Deleted = "deleted",
    }
}

stored_enum! {
    /// Where a resource is, as the reconciler last saw it.
    State as "ResourceState" {
        Pending = "pending",
        Ready = "ready",
        Updating = "updating",
        Deleting = "deleting",
        Deleted = "deleted",
        Error = "error",
    }
}

stored_enum! {
    /// What the tenant asked for.
    Desired as "DesiredState" {
        Present = "present",
        Absent = "absent",
    }
}

stored_enum! {
    /// Where an address's assignment to its instance is.
    Assignment as "AssignmentState" {
        /// On no instance.
        None = "none",
        /// Being assigned.
        Pending = "pending",
        /// On the instance.
        Ready = "ready",
        /// Being unassigned.
        Deleting = "deleting",
        /// Not assigned as wanted: see `assignmentMessage`.
        Error = "error",
    }
}

stored_enum! {
    VolumeKind as "VolumeKind" {
        /// A disk on one instance at a time.
        Block = "block",
        /// A network file share that the instances of one tenant network mount at once.
        Shared = "shared",
    }
}

stored_enum! {
    /// The filesystem a block volume is formatted with when it is made; NONE leaves it unformatted.
    VolumeFilesystem as "VolumeFilesystem" {
        #[graphql(name = "EXT4")]
        Ext4 = "ext4",
        #[graphql(name = "XFS")]
        Xfs = "xfs",
        #[graphql(name = "NONE")]
        None = "none",
    }
}

stored_enum! {
    FilesystemKind as "FilesystemKind" {
        /// An elastic NFS filesystem across every zone of the network (Amazon EFS on AWS).
        Nfs = "nfs",
        /// A Lustre filesystem in one zone, for scratch and checkpoints (Amazon FSx for Lustre).
        Lustre = "lustre",
    }
}

stored_enum! {
    Deployment as "FilesystemDeployment" {
        /// Not replicated: for data that can be made again (the default).
        Scratch = "scratch",
        /// Replicated within its zone, for longer-lived data.
        Persistent = "persistent",
    }
}

stored_enum! {
    ProviderKind as "ProviderKind" {
        Digitalocean = "digitalocean",
        Aws = "aws",
    }
}

stored_enum! {
    Billing as "Billing" {
        /// The platform's account: resources bill usage.
        Metered = "metered",
        /// The tenant's own account: no usage is billed.
        Byo = "byo",
    }
}

stored_enum! {
    AddressFamily as "AddressFamily" {
        #[graphql(name = "IPV4")]
        Ipv4 = "ipv4",
        #[graphql(name = "IPV6")]
        Ipv6 = "ipv6",
    }
}

stored_enum! {
    /// What deleting an instance does to its machine.
    OnDelete as "InstanceOnDelete" {
        /// The machine is deleted, with its deleteWithInstance volumes.
        Delete = "delete",
        /// The machine is left running: its volumes are only detached and its addresses unassigned.
        Detach = "detach",
    }
}

stored_enum! {
    /// Which way the traffic a firewall rule names flows, seen from the instances it applies to.
    Direction as "FirewallDirection" {
        /// Into the instances, from its peers.
        Inbound = "inbound",
        /// Out of the instances, to its peers.
        Outbound = "outbound",
    }
}

stored_enum! {
    /// What a firewall rule does with the traffic it names.
    RuleAction as "FirewallAction" {
        Allow = "allow",
        /// No provider here can express it: refused as UNSUPPORTED before anything is recorded.
        Deny = "deny",
    }
}

stored_enum! {
    Protocol as "FirewallProtocol" {
        Tcp = "tcp",
        Udp = "udp",
        /// Has no ports.
        Icmp = "icmp",
    }
}

placeholder!(State = Pending, Desired = Present, VolumeKind = Block, OnDelete = Delete);

#[cfg(test)]
mod tests {
    use super::*;
    use sea_orm::Iterable;

    #[test]
    fn each_state_is_stored_and_sent_as_its_lowercase_word() {
        for state in State::iter() {
            assert_eq!(state.to_value(), state.as_str());
            assert_eq!(serde_json::to_value(state).unwrap(), state.as_str());
            assert_eq!(State::try_from_value(&state.as_str().to_owned()).unwrap(), state);
        }
        assert_eq!(Assignment::None.as_str(), "none");
        assert_eq!(ProviderKind::Digitalocean.to_string(), "digitalocean");
    }
}
