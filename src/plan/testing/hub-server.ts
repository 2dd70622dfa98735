/** The tests' hub is the demo's own stand-in: one implementation of the endpoints @huggingface/hub calls. */
export { startHubServer, type HubRepositoryHistory, type HubServer, type HubServerOptions } from "../../demo/local-hub.js";
