/** The opcodes of RFC 6455, section 5.2. */
export const Opcode = {
  CONTINUATION: 0x0,
  TEXT: 0x1,
  BINARY: 0x2,
  CLOSE: 0x8,
  PING: 0x9,
  PONG: 0xa,
} as const;

/**
 * The header of one unmasked WebSocket frame (RFC 6455, section 5.2) of `payloadLength` bytes:
 * FIN and the opcode, then the length in 7 bits, or 126 and 16 bits, or 127 and 64 bits
 * (big-endian). Unmasked frames are what a server sends; a client must mask.
 *
 * A server writes this header and then the payload's chunks to its socket, so a BufferResponse
 * header and the payload view of its segment arrive as one whole message without being joined
 * on either side (see WsConnection).
 *
 * @param payloadLength - an integer in `[0, 2^53)`.
 * @param opcode - binary by default.
 * @param fin - false for a fragment that more fragments of its message follow.
 */
export function frameHeader(
  payloadLength: number,
  opcode: number = Opcode.BINARY,
  fin = true,
): Buffer {
  let header: Buffer;
  if (payloadLength < 126) {
    header = Buffer.allocUnsafe(2);
    header[1] = payloadLength;
  } else if (payloadLength < 0x10000) {
    header = Buffer.allocUnsafe(4);
    header[1] = 126;
    header.writeUInt16BE(payloadLength, 2);
  } else {
    header = Buffer.allocUnsafe(10);
    header[1] = 127;
    header.writeUInt32BE(Math.floor(payloadLength / 0x100000000), 2);
    header.writeUInt32BE(payloadLength >>> 0, 6);
  }
  header[0] = (fin ? 0x80 : 0) | opcode;
  return header;
}
