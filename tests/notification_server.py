"""A desktop notification server for the tests: owns ``org.freedesktop.Notifications``
on the session bus the fixture started and records every Notify it is sent, one JSON
line each, in the file named by its argument. Prints ``ready`` once it owns the name.

Run as ``python -m tests.notification_server FILE`` with DBUS_SESSION_BUS_ADDRESS set.
"""

from __future__ import annotations

import json
import sys

from jeepney import HeaderFields, MessageType, new_error, new_method_return
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import open_dbus_connection

NAME = "org.freedesktop.Notifications"


def main(out: str) -> None:
    with open_dbus_connection(bus="SESSION") as conn:
        reply = conn.send_and_get_reply(message_bus.RequestName(NAME, 4))  # do not queue
        if reply.body != (1,):  # 1: primary owner
            raise SystemExit(f"could not own {NAME}: {reply.body}")
        print("ready", flush=True)
        number = 0
        while True:
            msg = conn.receive()
            if msg.header.message_type != MessageType.method_call:
                continue
            member = msg.header.fields.get(HeaderFields.member)
            if member == "Notify":
                app, _replaces, _icon, summary, body, _actions, _hints, _timeout = msg.body
                number += 1
                with open(out, "a", encoding="utf-8") as f:
                    f.write(json.dumps({"app": app, "summary": summary, "body": body}) + "\n")
                conn.send(new_method_return(msg, "u", (number,)))
            elif member == "GetCapabilities":
                conn.send(new_method_return(msg, "as", (["body"],)))
            else:
                conn.send(new_error(msg, "org.freedesktop.DBus.Error.UnknownMethod"))


if __name__ == "__main__":
    main(sys.argv[1])
