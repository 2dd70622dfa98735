/** The demo folder's face: what other folders of src/ use from it. */
export { demoChatModel } from "./demo-catalog.js";
export { runDemo, type RunningDemo } from "./run-demo.js";
