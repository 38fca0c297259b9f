/**
 * The node store's on-disk layout version. A node checks it when it opens its LMDB store (a store
 * of another version is moved aside and rebuilt), and a node asks the control plane's snapshot
 * image for this version (the image refuses another). 2: entities in the payload.ts codec, ids in
 * keys through the store's key-part encoding.
 */
export const STORE_FORMAT = 2;
