/** The auth folder's face: what other folders of src/ use from it. */
export { bearerToken } from "./bearer-token.js";
export { type ControlSecret, ControlSecrets } from "./control-secret.js";
export { hashToken, sameSecret, newToken } from "./tokens.js";
