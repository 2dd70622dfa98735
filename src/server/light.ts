/** The server folder's face: what other folders of src/ use from it. */
export { adminTokenFileName, dataDirOption } from "./admin-token-file.js";
