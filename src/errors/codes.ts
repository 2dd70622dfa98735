/**
 * The one list of error codes. A code is a stable interface: the CLI, the
 * console and scripts branch on it, so a code is never renamed or reused for
 * another kind of failure. Each code is documented in docs/ERRORS.md; a test
 * fails when one is missing there.
 *
 * Domain errors carry no HTTP status: src/http/error-handler.ts maps codes to
 * statuses in one place.
 */
export const errorCodes = {
  invalid_yaml: "A YAML file could not be parsed; the message names the file, line and column.",
  invalid_input: "A value does not match the schema; the message names its path and what is expected.",
  unknown_key: "A key that the schema does not know; the message suggests the nearest known key.",
  name_taken: "A model, adapter or alias name is already used in the catalog's one namespace, a node name by another live agent (on any machine, this one included), or a token name by another token.",
  unknown_fallback: "A fallback names a model that is not in the catalog.",
  fallback_cycle: "Fallbacks that lead back to the model that named them.",
  unknown_engine: "A profile names an engine llmgw has no driver for.",
  invalid_profile: "A profile that its engine cannot run (for example, a GPU engine with no cards).",
  context_too_long: "A context longer than the model was trained for.",
  model_not_found: "No model of that name in the catalog.",
  model_in_use: "Another model names this one as a fallback; change that model's fallbacks first.",
  declared_in_file: "The model is declared in server.yaml; the file would undo a change at the next start.",
  profile_not_found: "The model has no profile of that name.",
  unauthorized: "No bearer token, or one the server does not know.",
  token_not_found: "No admin-API token of that name.",
  gateway_key_not_found: "No gateway API key of that name.",
  last_admin_token: "Revoking this token would leave no admin token; create another first.",
  forbidden: "The token is valid but its role may not do this.",
  version_unsupported: "The CLI and the server (or agent and server) have no API version in common.",
  route_not_found: "No API route at that method and path.",
  server_unreachable: "The CLI could not connect to the server at the address it names.",
  config_invalid: "server.yaml or a command-line option is not usable; the message says which and why.",
  join_refused: "The server refused the agent's join token or node credential; the message says which and how to get a new one.",
  source_unavailable: "A replica's weights could not be fetched; the message names the URL or path and the answer it got.",
  checksum_mismatch: "Fetched weights do not match the checksum the source published; the message names the file and both sums.",
  engine_missing: "The engine's program is not installed on the node; the message names the engine, the program and the node.",
  engine_failed: "An engine exited or never became healthy while loading; the message carries its log tail.",
  port_taken: "The port chosen for an engine is already used by another process on the node.",
  cards_busy: "A replica asks for cards another replica on the node already uses.",
  cards_missing: "The node does not have the cards a profile needs, busy or not: none of its class, or fewer in all than it asks for.",
  replica_not_found: "No replica of that id on the node.",
  replica_conflict: "A replica of that id already exists (on any node, or with a different specification), or is still stopping.",
  node_cordoned: "The node is cordoned or draining: nothing new is placed there until `ctl node uncordon`.",
  no_room: "A rolling restart has no room to start a replica beside the old one; --in-place stops each first.",
  node_not_found: "No node of that name has joined the server.",
  agent_unreachable: "The server could not reach a node agent at the control address it reported.",
  heads_not_divisible: "Tensor parallel over that many cards cannot split the model's attention: the count must divide the attention heads and divide (or be a multiple of) the KV heads; the message names both.",
  does_not_fit: "No candidate fits the model at the requested context; the message says what is short and by how much.",
  architecture_field_missing: "config.json (or GGUF metadata) lacks a field the memory formula needs; the message names the field and the file.",
  source_unreadable: "A model source (HF id, mirror URL, local folder or GGUF file) could not be read; the message says which file and why.",
  weights_metadata_missing: "A model source has no weights metadata to count parameters from (no safetensors header, index or GGUF tensors).",
  body_too_large: "A request body over the server's size limit; the message states the limit.",
  uri_too_long: "A path segment longer than any name or id the API accepts.",
  headers_too_large: "The request line and headers together exceed what the server reads (about 16 KB).",
  request_timeout: "The client did not send the whole request in time.",
  adapter_invalid: "A LoRA adapter that its base model's engine cannot attach: not a LoRA, for another architecture, of a rank above the engine's maximum, or in the other engine's format.",
  context_length_exceeded: "A /v1 request's prompt plus max_tokens is over the model's context, or max_tokens is over its max_output; refused before any engine sees it.",
  model_loading: "No replica of the model (or of its fallbacks) became ready within its queue deadline; retry after the Retry-After seconds.",
  queue_full: "Too many requests already wait for the model's first replica; retry after the Retry-After seconds.",
  upstream_failed: "Every replica tried (and every fallback) failed before answering: connection refused or reset, 502 or 503.",
  gateway_shutting_down: "The gateway is stopping and takes no new request; send it to another gateway.",
  internal: "A failure inside llmgw; the server log has the details under the request id.",
} as const;

export type ErrorCode = keyof typeof errorCodes;
