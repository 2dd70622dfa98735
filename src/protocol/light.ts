/** The protocol folder's face: what other folders of src/ use from it. */
export { softwareVersion, apiHeader, clientApiRange, formatApiRange, userHeader, versionHeader } from "./api-version.js";
