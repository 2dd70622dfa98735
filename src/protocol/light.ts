/** The protocol folder's light face: the API version headers every ctl call sends, loading no schema library. */
export { softwareVersion, apiHeader, clientApiRange, formatApiRange, userHeader, versionHeader } from "./api-version.js";
