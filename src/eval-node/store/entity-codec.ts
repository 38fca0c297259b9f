/**
 * Value codec of the node store's `entities` database (store/lmdb.ts): the gRPC payload codec
 * (contract/payload.ts), so an entity is stored as the msgpack it arrived in and `__proto__` keys
 * survive.
 */
import { unpackTrusted, encodePayload } from '../../contract/payload.js';
import { StoreCorruptionError } from './types.js';

/**
 * The codec. `encode` stores bytes as given (a payload already in this codec: StoreChange.raw;
 * no entity is itself a byte array) and packs anything else. lmdb-js hands `decode` a reused
 * buffer whose logical size is `bytes.length` (get) or the second argument (range reads); the
 * codec copies everything it keeps. A value that does not decode calls `onError` and throws
 * {@link StoreCorruptionError}.
 */
export function entityCodec(onError: () => void): { encode(value: unknown): Buffer | Uint8Array; decode(bytes: Uint8Array, size?: unknown): unknown } {
  return {
    encode: (value) => (value instanceof Uint8Array ? value : encodePayload(value)),
    decode: (bytes, size) => {
      try {
        return unpackTrusted(Buffer.from(bytes.buffer, bytes.byteOffset, typeof size === 'number' ? size : bytes.length));
      } catch (e) {
        onError();
        throw new StoreCorruptionError(`a stored entity does not decode (damaged store): ${(e as Error).message}`);
      }
    },
  };
}
