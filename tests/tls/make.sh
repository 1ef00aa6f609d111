#!/usr/bin/env bash
# Makes the test certificates of tests/test_tls.py (committed, so that the tests need no
# openssl command): a CA, and server, server2 and client certificates it signed, valid for
# a century, and DH parameters. Run it again only to replace them.
set -euo pipefail
cd "$(dirname "$0")"
days=36500
openssl req -x509 -new -nodes -newkey rsa:2048 -sha256 -days $days -subj '/O=store test/CN=Test CA' \
    -keyout ca.key -out ca.crt
for name in server server2 client; do
    openssl req -new -nodes -newkey rsa:2048 -subj "/O=store test/CN=$name" \
        -keyout $name.key -out $name.csr
    openssl x509 -req -sha256 -days $days -in $name.csr -CA ca.crt -CAkey ca.key \
        -set_serial "0x$(openssl rand -hex 8)" -out $name.crt
    rm $name.csr
done
rm ca.key  # nothing more is signed with it
openssl dhparam -out redis.dh 2048
