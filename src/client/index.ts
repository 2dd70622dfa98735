/** The client folder's face: what other folders of src/ use from it. */
export { admin } from "./admin-calls.js";
export { adminPath } from "./admin-routes.js";
export { ApiClient, DryRunAnswered, RemoteError } from "./api-client.js";
