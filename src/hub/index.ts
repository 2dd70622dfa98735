/** The hub folder's face: what other folders of src/ use from it. */
export { startHubServer, type HubServer } from "./local-hub.js";
