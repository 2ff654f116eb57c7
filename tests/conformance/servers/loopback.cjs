// Preloaded into third-party Node servers (node --require loopback.cjs ...): every TCP
// listen() binds 127.0.0.1 whatever host the server asks for, so a test server is never
// reachable from outside this machine.
"use strict";
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  if (first !== null && typeof first === "object" && !Array.isArray(first)) {
    if (first.path === undefined && first.fd === undefined && first.handle === undefined) {
      args[0] = { ...first, host: "127.0.0.1" };
    }
  } else if (typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))) {
    if (typeof args[1] === "string") args[1] = "127.0.0.1";
    else args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
