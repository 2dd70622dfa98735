/** The net folder's light face: what the admin client needs to name a certificate failure, for ctl's calls, which need not load the HTTPS server. */
export { certificateFailure } from "./tls-files.js";
