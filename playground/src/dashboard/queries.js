// Every GraphQL document the dashboard sends. Each resource has one fragment,
// used by its list, by `nodes(ids:)` refetches and by the mutations, so a row
// always holds the same fields whichever way it arrived.

export const PAGE_SIZE = 20;
// The largest `events` page the server gives (service/events.rs MAX_PAGE).
export const EVENT_PAGE = 1000;

const VOLUME = `fragment VolumeFields on ProviderVolume {
  __typename id name region kind sizeGiB observedSizeGiB state message device networkId poolId version
  mount { source type }
  attachments { id instanceId state message instance { id name } }
  snapshots { id }
}`;

const SNAPSHOT = `fragment SnapshotFields on ProviderSnapshot {
  __typename id name volumeId volumeKind region state message sizeGiB minDiskSizeGiB version
}`;

const ADDRESS = `fragment AddressFields on ProviderAddress {
  __typename id name region family address state message lost poolId version
  instanceId assignmentState assignmentMessage instance { id name }
}`;

const NETWORK = `fragment NetworkFields on Network {
  __typename id name poolId region ipRange state message version
  subnets { id region zone ipRange state }
}`;

const INSTANCE = `fragment InstanceFields on Instance {
  __typename id name poolId region zone size image networkId state message version
  filesystems { filesystemId path }
}`;

const FILESYSTEM = `fragment FilesystemFields on Filesystem {
  __typename id networkId name kind sizeGiB zone region state message version mount { fstype source options }
}`;

const FIREWALL_RULE = `fragment FirewallRuleFields on FirewallRule {
  __typename id networkId name direction protocol fromPort toPort state message version
  peers { addresses instanceIds } appliesTo
}`;

const FRAGMENTS = { VolumeFields: VOLUME, SnapshotFields: SNAPSHOT, AddressFields: ADDRESS,
  NetworkFields: NETWORK, InstanceFields: INSTANCE, FilesystemFields: FILESYSTEM, FirewallRuleFields: FIREWALL_RULE };

// Appends the fragments the document spreads, and only those: GraphQL refuses
// a document with an unused fragment.
function withFragments(doc) {
  const used = new Set([...doc.matchAll(/\.\.\.(\w+Fields)\b/g)].map((m) => m[1]));
  return [doc, ...[...used].map((name) => FRAGMENTS[name])].join('\n');
}

export const ME = `query Me { me { tenantId operator } }`;

// Used only to find where the feed ends now (and the most recent events):
// no `data`, which would make a long history heavy to page through.
export const EVENT_PAGE_QUERY = `query EventPage($tenantId: String!, $after: String, $first: Int!) {
  events(tenantId: $tenantId, after: $after, first: $first) {
    edges { node { cursor id type subject version time } }
    pageInfo { endCursor hasNextPage }
  }
}`;

export const POOLS_AND_QUOTAS = `query PoolsAndQuotas($tenantId: String!) {
  pools(tenantId: $tenantId) { id name billing providerKind regions zones sizes images }
  quotas(tenantId: $tenantId) { poolId resource max used version }
}`;

export const QUOTAS = `query Quotas($tenantId: String!) {
  quotas(tenantId: $tenantId) { poolId resource max used version }
}`;

// One page of one list: `$field` is replaced by the list's root field.
const LIST_FIELDS = {
  volumes: ['providerVolumes', 'VolumeFields'],
  snapshots: ['providerSnapshots', 'SnapshotFields'],
  addresses: ['providerAddresses', 'AddressFields'],
  networks: ['networks', 'NetworkFields'],
  instances: ['instances', 'InstanceFields'],
};
export const LISTS = Object.keys(LIST_FIELDS);

export function listPageQuery(list) {
  const [field, fragment] = LIST_FIELDS[list];
  return withFragments(`query ListPage($tenantId: String!, $first: Int!, $after: String) {
    page: ${field}(tenantId: $tenantId, first: $first, after: $after) {
      edges { node { ...${fragment} } }
      pageInfo { endCursor hasNextPage }
    }
  }`);
}

// The network type has no `filesystems` or `firewallRules` field, so those of
// the shown networks are read with two aliased lists per network, in one request.
export function networkPartsQuery(networkIds) {
  const vars = networkIds.map((_, i) => `$n${i}: String!`).join(', ');
  const fields = networkIds
    .map((_, i) => `f${i}: filesystems(tenantId: $tenantId, networkId: $n${i}) { ...FilesystemFields }
      r${i}: firewallRules(tenantId: $tenantId, networkId: $n${i}) { ...FirewallRuleFields }`)
    .join('\n');
  return withFragments(`query NetworkParts($tenantId: String!, ${vars}) {\n${fields}\n}`);
}

// Refetches the subjects of live events in one request; null for one that is gone.
export const NODES = withFragments(`query Nodes($ids: [ID!]!) {
  nodes(ids: $ids) {
    __typename id
    ... on ProviderVolume { ...VolumeFields }
    ... on ProviderSnapshot { ...SnapshotFields }
    ... on ProviderAddress { ...AddressFields }
    ... on Network { ...NetworkFields }
    ... on Instance { ...InstanceFields }
  }
}`);

export const EVENTS_SUBSCRIPTION = `subscription Events($tenantId: String!, $after: String) {
  events(tenantId: $tenantId, after: $after) { cursor id type subject version time data }
}`;

export const MOUNT_LINES = `query MountLines($tenantId: String!, $volumeId: String!, $path: String!, $readOnly: Boolean!) {
  providerVolume(tenantId: $tenantId, volumeId: $volumeId) {
    id mount { source type mountLines(path: $path, readOnly: $readOnly) { cloudConfig fstab } }
  }
}`;

// Mutations: each returns the resource's new view, merged like any other.
const mutation = (name, field, input, fragment) => withFragments(`mutation ${name}($input: ${input}!) {
  result: ${field}(input: $input) { ...${fragment} }
}`);

export const MUTATIONS = {
  volumeCreate: mutation('VolumeCreate', 'providerVolumeCreate', 'ProviderVolumeCreateInput', 'VolumeFields'),
  volumeAttach: mutation('VolumeAttach', 'providerVolumeAttach', 'ProviderVolumeAttachInput', 'VolumeFields'),
  volumeDetach: mutation('VolumeDetach', 'providerVolumeDetach', 'ProviderVolumeDetachInput', 'VolumeFields'),
  volumeResize: mutation('VolumeResize', 'providerVolumeResize', 'ProviderVolumeResizeInput', 'VolumeFields'),
  volumeSnapshot: mutation('VolumeSnapshot', 'providerVolumeSnapshot', 'ProviderVolumeSnapshotInput', 'SnapshotFields'),
  volumeDelete: mutation('VolumeDelete', 'providerVolumeDelete', 'ProviderVolumeDeleteInput', 'VolumeFields'),
  addressCreate: mutation('AddressCreate', 'providerAddressCreate', 'ProviderAddressCreateInput', 'AddressFields'),
  addressAssign: mutation('AddressAssign', 'providerAddressAssign', 'ProviderAddressAssignInput', 'AddressFields'),
  addressUnassign: mutation('AddressUnassign', 'providerAddressUnassign', 'ProviderAddressUnassignInput', 'AddressFields'),
  addressDelete: mutation('AddressDelete', 'providerAddressDelete', 'ProviderAddressDeleteInput', 'AddressFields'),
  snapshotRestore: mutation('SnapshotRestore', 'providerSnapshotRestore', 'ProviderSnapshotRestoreInput', 'VolumeFields'),
  snapshotDelete: mutation('SnapshotDelete', 'providerSnapshotDelete', 'ProviderSnapshotDeleteInput', 'SnapshotFields'),
  networkCreate: mutation('NetworkCreate', 'networkCreate', 'NetworkCreateInput', 'NetworkFields'),
  networkAddSubnet: mutation('NetworkAddSubnet', 'networkAddSubnet', 'NetworkAddSubnetInput', 'NetworkFields'),
  networkRemoveSubnet: mutation('NetworkRemoveSubnet', 'networkRemoveSubnet', 'NetworkRemoveSubnetInput', 'NetworkFields'),
  networkDelete: mutation('NetworkDelete', 'networkDelete', 'NetworkDeleteInput', 'NetworkFields'),
  instanceCreate: mutation('InstanceCreate', 'instanceCreate', 'InstanceCreateInput', 'InstanceFields'),
  instanceDelete: mutation('InstanceDelete', 'instanceDelete', 'InstanceDeleteInput', 'InstanceFields'),
  filesystemCreate: mutation('FilesystemCreate', 'filesystemCreate', 'FilesystemCreateInput', 'FilesystemFields'),
  filesystemDelete: mutation('FilesystemDelete', 'filesystemDelete', 'FilesystemDeleteInput', 'FilesystemFields'),
  ruleCreate: mutation('FirewallRuleCreate', 'firewallRuleCreate', 'FirewallRuleCreateInput', 'FirewallRuleFields'),
  ruleDelete: mutation('FirewallRuleDelete', 'firewallRuleDelete', 'FirewallRuleDeleteInput', 'FirewallRuleFields'),
};
