#!/bin/sh
# The runtime conformance suite's tools, in POSIX shell: the request is read
# with cat and its fields are picked out with sed. A JSON string is copied
# from the request to the answer still escaped, so it stays valid JSON
# without the script ever decoding it.

req=$(cat)

# str KEY: the value of the string argument KEY, as escaped JSON.
str() {
	printf '%s\n' "$req" | sed -n 's/.*"arguments":{.*"'"$1"'":"\([^"\\]*\(\\.[^"\\]*\)*\)".*/\1/p'
}

# num KEY: the value of the integer argument KEY.
num() {
	printf '%s\n' "$req" | sed -n 's/.*"arguments":{.*"'"$1"'":\([0-9]*\).*/\1/p'
}

tool=$(printf '%s\n' "$req" | sed -n 's/.*"tool":"\([a-z_]*\)".*/\1/p')

case $tool in
echo)
	t=$(str text)
	printf '{"type":"success","content":"%s","structured":{"text":"%s"}}\n' "$t" "$t"
	;;
fail)
	printf '{"type":"error","message":"%s","trace":["in sh"],"transient":false}\n' "$(str message)"
	;;
sleep)
	marker=$(str marker)
	sleep 300 &
	printf 'pid %s\npid %s\nstarted\n' "$$" "$!" >>"$marker"
	wait
	;;
crash)
	printf '%s\n' "$(str message)" >&2
	exit 3
	;;
huge)
	printf '{"type":"success","content":"'
	head -c "$(num size)" /dev/zero | tr '\0' x
	printf '"}\n'
	;;
ask)
	s=$(str subject)
	case $req in
	*'"answers":{"confirm":true'*)
		printf '{"type":"success","content":"confirmed %s"}\n' "$s" ;;
	*'"answers":{"confirm":false'*)
		printf '{"type":"error","message":"declined %s"}\n' "$s" ;;
	*)
		printf '{"type":"needs_input","question":{"id":"confirm","text":"Go ahead with %s?","answer_type":"boolean"}}\n' "$s" ;;
	esac
	;;
*)
	printf '{"type":"error","message":"no tool named %s"}\n' "$tool"
	;;
esac
