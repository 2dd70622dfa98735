/** The server folder's light face: where ctl finds the admin token file, loading none of the server. */
export { adminTokenFileName, dataDirOption } from "./admin-token-file.js";
