/** The net folder's face: what other folders of src/ use from it. */
export { httpsServerFactory, type CertificateLog, createRenewingHttpsServer } from "./https-server.js";
export { isRetryableStatus } from "./retryable-status.js";
export { verifyingDispatcher, type TlsFiles, certificateFailure, readCaFile, readTlsFiles, caFromOption, tlsFromFlags } from "./tls-files.js";
export { withUrlCredentials } from "./url-credentials.js";
