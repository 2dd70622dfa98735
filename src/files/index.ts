/** The files folder's face: what other folders of src/ use from it. */
export { writePrivateFile, ensurePrivateDirectory, privateFileWarning, privateFileMode } from "./private-files.js";
export { quoteForShell } from "./quote-for-shell.js";
