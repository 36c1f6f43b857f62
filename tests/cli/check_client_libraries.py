#!/usr/bin/env python3
"""Checks that `xpool` (the client commands) loads none of the roles' heavy libraries.

A client command's start-up is mostly the dynamic loader's work, one step per shared library; `xpool` links only
what the client commands use (--as-needed) and leaves gRPC, protobuf, SQLite and PostgreSQL to `xpool-roles`; it
speaks HTTP through src/http's own client, so cpp-httplib and what Debian builds it with (OpenSSL, zlib, brotli)
stay out too.
Reads each binary's whole dependency list with ldd and fails naming any library that must not be there. The same
list checked against `xpool-roles` must find them (so the check itself works).

Usage: check_client_libraries.py XPOOL XPOOL_ROLES
"""
import re
import subprocess
import sys

HEAVY = re.compile(r"lib(grpc|gpr|protobuf|sqlite3|pq|absl|cpp-httplib|ssl|crypto|brotli|z\.so)")


def libraries(binary):
    out = subprocess.run(["ldd", binary], check=True, capture_output=True, text=True).stdout
    return sorted({line.split()[0] for line in out.splitlines() if line.strip() and "=>" in line})


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    client, roles = libraries(sys.argv[1]), libraries(sys.argv[2])
    print(f"xpool loads {len(client)} shared libraries, xpool-roles {len(roles)}")
    heavy_in_client = [lib for lib in client if HEAVY.match(lib)]
    heavy_in_roles = [lib for lib in roles if HEAVY.match(lib)]
    if not heavy_in_roles:
        print("the check finds none of the roles' libraries in xpool-roles either: it checks nothing")
        return 1
    if heavy_in_client:
        print("xpool loads libraries only the roles need: " + ", ".join(heavy_in_client))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
