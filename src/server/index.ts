/** The server folder's face: what other folders of src/ use from it. */
export { startServer, describeStorage, type RunningServer } from "./start-server.js";
export * from "./light.js";
