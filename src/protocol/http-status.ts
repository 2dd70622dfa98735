import type { ErrorCode } from "../errors/codes.js";

/**
 * The one place domain errors become HTTP (STYLE 1). A Record over every code
 * makes the compiler refuse a new code that has no status yet.
 */
export const statusForCode: Record<ErrorCode, number> = {
  invalid_yaml: 400,
  invalid_input: 400,
  unknown_key: 400,
  name_taken: 409,
  unknown_fallback: 400,
  fallback_cycle: 400,
  unknown_engine: 400,
  invalid_profile: 400,
  context_too_long: 400,
  model_not_found: 404,
  model_in_use: 409,
  declared_in_file: 409,
  profile_not_found: 404,
  unauthorized: 401,
  token_not_found: 404,
  last_admin_token: 409,
  forbidden: 403,
  version_unsupported: 426,
  route_not_found: 404,
  server_unreachable: 502,
  config_invalid: 400,
  join_refused: 401,
  source_unavailable: 502,
  checksum_mismatch: 502,
  engine_missing: 409,
  engine_failed: 502,
  port_taken: 409,
  cards_busy: 409,
  replica_not_found: 404,
  replica_conflict: 409,
  node_cordoned: 409,
  no_room: 409,
  node_not_found: 404,
  agent_unreachable: 502,
  internal: 500,
  does_not_fit: 422,
  architecture_field_missing: 422,
  // One status for every unreadable source (a missing local file, a 404 on the
  // mirror, a hub outage): the message says which file failed and why.
  source_unreadable: 422,
  weights_metadata_missing: 422,
};
