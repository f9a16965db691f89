#!/usr/bin/env bash
# `nginx -t` on deploy/nginx/qvl.conf inside a minimal nginx.conf in a temp
# prefix (no root, no /etc/nginx). Skips (exit 77) where nginx is not installed.
#   nginx_config.sh CONF
set -euo pipefail
conf=$1
nginx=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$nginx" ] || { echo "nginx_config: nginx not found, skipped"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/logs"
cp "$conf" "$dir/qvl.conf"
cat > "$dir/nginx.conf" <<CONF
pid $dir/nginx.pid;
error_log $dir/logs/error.log;
events {}
http {
    access_log off;
    client_body_temp_path $dir/body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
    include $dir/qvl.conf;
}
CONF
out=$("$nginx" -t -q -p "$dir" -e "$dir/logs/error.log" -c "$dir/nginx.conf" 2>&1) || {
  echo "$out"; echo "nginx_config: nginx -t failed"; exit 1; }
# nginx -t passes with warnings (e.g. two balancing methods in one upstream): fail on those too.
if grep -q '\[warn\]' <<<"$out$(cat "$dir/logs/error.log" 2>/dev/null)"; then
  echo "$out"; echo "nginx_config: warnings"; exit 1
fi
echo "nginx_config: OK"
