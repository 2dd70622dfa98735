/**
 * The placement functions the reconciler calls, in one place: the pure
 * placement of src/placement when it is in, the interim first fit until then.
 */
export { choosePreemptions, placeReplicas } from "./interim-placement.js";
