// @ferry-mq/sdk: ferry's TypeScript SDK. The types are generated from openapi/openapi.yaml (schema.gen.ts); the
// rest is the small layer the raw openapi-fetch client lacks.

export {
  createClient,
  isCreate,
  type Client,
  type ClientOptions,
  type ListItem,
  type ListPath,
  type Method,
  type RetryOptions,
  type Success,
  type WaitOptions,
  type WorkRequest,
} from "./client.js";
export { FerryError, WatchClosedError, WorkRequestFailedError } from "./errors.js";
export {
  NegativeError,
  Watcher,
  type ConsumeOptions,
  type ConsumerStatus,
  type HandlerContext,
  type Message,
  type MessageHandler,
  type WatchEntryError,
  type WatchOptions,
} from "./watch.js";
export type { WebSocketConstructor, WhatwgWebSocket } from "./websocket.js";
export type { components, operations, paths } from "./schema.gen.js";

import type { components } from "./schema.gen.js";

/** Every schema of the API by name: `Schemas["Queue"]`, `Schemas["PutMessagesDetailsEntry"]`, … */
export type Schemas = components["schemas"];
export type Queue = Schemas["Queue"];
export type ConsumerGroup = Schemas["ConsumerGroup"];
export type Compartment = Schemas["Compartment"];
