import { describe, expect, it } from "vitest";
import { MessageId } from "./message-id.js";
import {
  ADD_CREDIT,
  BACKLOG_ANNOUNCEMENT,
  BODY_LENGTH,
  BUFFER_RESPONSE,
  errorResponseBodySize,
  FRAME_HEADER,
  NEW_BUFFER_SIZE,
  PARTITION_REQUEST,
  RECEIVER_ONLY,
  SEGMENT_ID,
  taskEventRequestBodySize,
} from "./message-layout.js";

describe("message layouts", () => {
  it("give every message the frame size of the catalogue in docs/protocol.md", () => {
    const frame = (body: number) => FRAME_HEADER.BYTES + body;
    expect(FRAME_HEADER).toEqual({ frameLength: 0, magic: 4, messageId: 8, BYTES: 9 });
    expect(frame(BUFFER_RESPONSE.BYTES)).toBe(47);
    expect(frame(errorResponseBodySize(0, 0, false))).toBe(18);
    expect(frame(errorResponseBodySize(0, 0, true))).toBe(34);
    expect(frame(PARTITION_REQUEST.BYTES)).toBe(97);
    expect(frame(taskEventRequestBodySize(0))).toBe(89);
    expect(frame(RECEIVER_ONLY.BYTES)).toBe(25);
    expect(frame(ADD_CREDIT.BYTES)).toBe(29);
    expect(frame(BACKLOG_ANNOUNCEMENT.BYTES)).toBe(29);
    expect(frame(NEW_BUFFER_SIZE.BYTES)).toBe(29);
    expect(frame(SEGMENT_ID.BYTES)).toBe(33);
  });

  it("puts the BufferResponse fields at the offsets of docs/protocol.md (minus the 9-byte header)", () => {
    const atFrame = Object.fromEntries(
      Object.entries(BUFFER_RESPONSE).map(([name, offset]) => [name, FRAME_HEADER.BYTES + offset]),
    );
    expect(atFrame).toEqual({
      receiverId: 9,
      subpartitionId: 25,
      numberOfPartialBuffers: 29,
      sequenceNumber: 33,
      backlog: 37,
      dataType: 41,
      isCompressed: 42,
      bufferSize: 43,
      BYTES: 47,
    });
  });

  it("has a body-length rule for every message id", () => {
    for (const id of Object.values(MessageId)) expect(BODY_LENGTH[id]).toBeDefined();
    expect(BODY_LENGTH[MessageId.CLOSE_REQUEST]).toEqual({ exact: true, bytes: 0 });
    expect(BODY_LENGTH[MessageId.TASK_EVENT_REQUEST]).toEqual({ exact: false, bytes: 80 });
  });
});
