#!/usr/bin/env bash
# Two hosts for real: two network namespaces joined by a veth pair, each a "host" with its own
# address (10.77.0.1 and 10.77.0.2, used only inside them) and hostname (its own UTS namespace:
# globe-a, globe-b), so Open MPI sees two nodes and carries the ranks' traffic over TCP between
# them. globe-launch runs on globe-a with --hosts globe-a:2,globe-b:2; Open MPI's rsh agent is a
# small script that starts the remote daemon inside globe-b's namespaces. Checks, against the same
# runs on one host with 4 ranks:
#   - the quick start prints the same lines, and its traffic crossed the veth pair;
#   - a sharded checkpoint written on two hosts resumes on one host, and one written on one host
#     resumes on two, each continuing with the losses of an uninterrupted run;
#   - a third host that cannot be reached (10.77.0.3: no machine has it; the agent tries to
#     connect as ssh would) fails the job within seconds, naming the host;
#   - without ssh, torchrun's form: one globe-launch per host (--nnodes 2 --node_rank 0|1
#     --master_addr 10.77.0.1), 2 x 1 and 2 x 2 ranks, prints what one host prints; a node that
#     never joins fails every launcher that came, naming it; a node 0 that never comes fails the
#     other launcher, naming its address.
# Needs root (network namespaces) and the `ip` and `unshare` tools: without them it prints why and
# exits 77, which CTest reports as skipped.
#   tests/hosts/two_hosts.sh BUILD_DIR
set -euo pipefail
BUILD=$(cd "${1:?usage: two_hosts.sh BUILD_DIR}" && pwd)
BIN="$BUILD/bin"
skip() { echo "SKIPPED: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root to create network namespaces"
command -v ip >/dev/null && command -v unshare >/dev/null || skip "needs the ip (iproute2) and unshare (util-linux) tools"

tag=$$
A="globe-a-$tag" B="globe-b-$tag"  # namespace names; the hosts are called globe-a and globe-b
WORK=$(mktemp -d /tmp/globe-two-hosts.XXXXXX)
cleanup() {
  ip netns del "$A" 2>/dev/null || true
  ip netns del "$B" 2>/dev/null || true
  rm -rf "/etc/netns/$A" "/etc/netns/$B" "$WORK"
}
trap cleanup EXIT
ip netns add "$A" 2>/dev/null || skip "cannot create a network namespace here (ip netns add failed: no CAP_SYS_ADMIN?)"
ip netns add "$B"
ip link add "va$tag" type veth peer name "vb$tag" || skip "cannot create a veth pair here"
ip link set "va$tag" netns "$A"
ip link set "vb$tag" netns "$B"
ip -n "$A" addr add 10.77.0.1/24 dev "va$tag"
ip -n "$B" addr add 10.77.0.2/24 dev "vb$tag"
for ns in "$A" "$B"; do
  ip -n "$ns" link set lo up
  # `ip netns exec` puts /etc/netns/NS/hosts in place of /etc/hosts: each host can name the other.
  mkdir -p "/etc/netns/$ns"
  printf '127.0.0.1 localhost\n10.77.0.1 globe-a\n10.77.0.2 globe-b\n10.77.0.3 globe-c\n' >"/etc/netns/$ns/hosts"
done
ip -n "$A" link set "va$tag" up
ip -n "$B" link set "vb$tag" up

# Open MPI starts the daemon of a remote host as `AGENT HOST COMMAND`; ours enters that host. Any
# other host it tries to reach from globe-a as ssh would (port 22, 5 s), and fails as ssh does.
cat >"$WORK/agent.sh" <<AGENT
#!/bin/bash
host=\$1; shift
case "\$host" in
  globe-a) ns=$A ;;
  globe-b) ns=$B ;;
  *) why=\$(ip netns exec "$A" timeout 5 bash -c "exec 3<>/dev/tcp/\$host/22" 2>&1)
     echo "agent: connect to host \$host port 22: \${why:-timed out}" >&2; exit 255 ;;
esac
exec ip netns exec "\$ns" unshare --uts sh -c "hostname \$host; \$*"
AGENT
chmod +x "$WORK/agent.sh"

# Runs globe-launch with its arguments on host globe-a, ranks on the hosts $HOSTS.
HOSTS=globe-a:2,globe-b:2
two_hosts() {
  ip netns exec "$A" unshare --uts sh -c 'hostname globe-a; exec "$@"' sh \
    "$BIN/globe-launch" --hosts "$HOSTS" --timeout 120 \
    --mca plm_rsh_agent "$WORK/agent.sh" --mca btl_tcp_if_include 10.77.0.0/24 \
    --mca oob_tcp_if_include 10.77.0.0/24 "$@"
}
one_host() { "$BIN/globe-launch" --nproc_per_node 4 --timeout 120 "$@"; }
bytes() { ip -n "$A" -s link show "va$tag" | awk '/RX:/{getline; rx=$1} /TX:/{getline; tx=$1} END{print rx + tx}'; }
fail() { echo "FAIL: $*"; exit 1; }
same() {  # same FILE1 FILE2 WHAT
  diff <(sort "$1") <(sort "$2") >"$WORK/diff" || { cat "$WORK/diff"; fail "$3"; }
  echo "ok: $3 ($(wc -l <"$1") lines)"
}

cd "$WORK"
two_hosts sh -c 'echo "rank $OMPI_COMM_WORLD_RANK on $(hostname)"' >hosts.txt
grep -q "rank 0 on globe-a" hosts.txt && grep -q "rank 1 on globe-a" hosts.txt &&
  grep -q "rank 2 on globe-b" hosts.txt && grep -q "rank 3 on globe-b" hosts.txt ||
  { cat hosts.txt; fail "ranks 0-1 run on globe-a and 2-3 on globe-b"; }
echo "ok: ranks 0-1 on globe-a, 2-3 on globe-b"

before=$(bytes)
two_hosts "$BIN/quickstart" --iters 20 >quick2.txt
crossed=$(( $(bytes) - before ))
one_host "$BIN/quickstart" --iters 20 >quick1.txt
same quick1.txt quick2.txt "the quick start on two hosts prints what it prints on one"
[ "$crossed" -gt 100000 ] || fail "the ranks' traffic crossed the veth pair (only $crossed bytes did)"
echo "ok: $crossed bytes crossed between the hosts"

one_host --no-prefix "$BIN/data_parallel" --iters 15 >ref.txt  # uninterrupted
two_hosts --no-prefix "$BIN/data_parallel" --iters 10 --ckpt "$WORK/ck2" >a.txt
[ -f "$WORK/ck2/step-000000000010/index.json" ] || fail "the two-host run saved a complete sharded checkpoint"
one_host --no-prefix "$BIN/data_parallel" --iters 15 --ckpt "$WORK/ck2" >b.txt
one_host --no-prefix "$BIN/data_parallel" --iters 10 --ckpt "$WORK/ck1" >c.txt
two_hosts --no-prefix "$BIN/data_parallel" --iters 15 --ckpt "$WORK/ck1" >d.txt
grep '^iter' ref.txt | head -10 >ref_first.txt
grep '^iter' ref.txt | tail -5 >ref_last.txt
grep '^iter' a.txt >a_iters.txt
grep '^iter' b.txt >b_iters.txt
grep '^iter' d.txt >d_iters.txt
same ref_first.txt a_iters.txt "two hosts train with the losses of one host"
same ref_last.txt b_iters.txt "a sharded checkpoint saved on two hosts resumes on one"
same ref_last.txt d_iters.txt "a sharded checkpoint saved on one host resumes on two"
HOSTS=globe-a:2,globe-b:1,globe-c:1
start=$(date +%s)
rc=0
two_hosts "$BIN/quickstart" --iters 2 >unreachable.txt 2>&1 || rc=$?
took=$(( $(date +%s) - start ))
[ "$rc" -ne 0 ] || { cat unreachable.txt; fail "a job with an unreachable host fails"; }
grep -q "globe-c" unreachable.txt || { cat unreachable.txt; fail "the error names the unreachable host"; }
[ "$took" -lt 30 ] || fail "the unreachable host is reported within seconds (took $took s)"
echo "ok: an unreachable host fails the job in $took s, named: $(grep -m1 'globe-c' unreachable.txt)"

# One launcher per host, no remote agent given: node 0 reaches globe-b through globe-b's launcher.
on_host() {  # on_host NAMESPACE HOSTNAME COMMAND...
  local ns=$1 name=$2
  shift 2
  ip netns exec "$ns" unshare --uts sh -c "hostname $name; exec \"\$@\"" sh "$@"
}
PORT=$((20000 + tag % 20000))
node() {  # node RANK NPROC [globe-launch args...]: this host's launcher of a 2-node job
  local rank=$1 nproc=$2 ns=$A name=globe-a
  shift 2
  [ "$rank" = 0 ] || { ns=$B; name=globe-b; }
  on_host "$ns" "$name" "$BIN/globe-launch" --nnodes "${NNODES:-2}" --node_rank "$rank" --nproc_per_node "$nproc" \
    --master_addr 10.77.0.1 --master_port "$PORT" --rdzv_timeout "${RDZV:-30}" "$@"
}
both_nodes() {  # both_nodes NPROC OUT [args...]: node 1 in the background, node 0 writing OUT
  local nproc=$1 out=$2 rc1=0
  shift 2
  node 1 "$nproc" "$@" >"$out.node1" 2>&1 &
  local pid=$!
  node 0 "$nproc" "$@" >"$out" || fail "node 0's launcher exited $? ($*)"
  wait "$pid" || rc1=$?
  [ "$rc1" -eq 0 ] || { cat "$out.node1"; fail "node 1's launcher exited $rc1 ($*)"; }
}
for nproc in 1 2; do
  both_nodes "$nproc" nodes.txt sh -c 'echo "rank $OMPI_COMM_WORLD_RANK on $(hostname)"'
  for r in $(seq 0 $((2 * nproc - 1))); do
    grep -q "rank $r on globe-$([ "$r" -lt "$nproc" ] && echo a || echo b)" nodes.txt || { cat nodes.txt; fail "--nnodes 2 x $nproc: rank $r on its node"; }
  done
  echo "ok: --nnodes 2 --nproc_per_node $nproc, no ssh: ranks 0-$((nproc - 1)) on globe-a, the rest on globe-b"
done
before=$(bytes)
both_nodes 2 quick_nodes.txt "$BIN/quickstart" --iters 20
crossed=$(( $(bytes) - before ))
same quick1.txt quick_nodes.txt "one launcher per node prints what one host prints"
[ "$crossed" -gt 100000 ] || fail "the ranks' traffic crossed the veth pair (only $crossed bytes did)"
one_host() { "$BIN/globe-launch" --nproc_per_node 2 --timeout 120 "$@"; }
one_host "$BIN/quickstart" --iters 20 >quick_2ranks.txt
both_nodes 1 quick_nodes1.txt "$BIN/quickstart" --iters 20
same quick_2ranks.txt quick_nodes1.txt "2 nodes x 1 rank print what 2 ranks on one host print"

# Node 2 of 3 never comes: both launchers that came fail within the rendezvous time, naming it.
start=$(date +%s)
rc0=0 rc1=0
NNODES=3 RDZV=3 node 1 1 true >missing.node1 2>&1 &
pid=$!
NNODES=3 RDZV=3 node 0 1 true >missing.node0 2>&1 || rc0=$?
wait "$pid" || rc1=$?
took=$(( $(date +%s) - start ))
[ "$rc0" -ne 0 ] && [ "$rc1" -ne 0 ] || fail "a node that never joins fails every launcher (exit codes $rc0, $rc1)"
grep -q "node 2 of 3 did not join at 10.77.0.1:$PORT" missing.node0 || { cat missing.node0; fail "node 0 names the missing node"; }
grep -q "node 2 of 3 did not join" missing.node1 || { cat missing.node1; fail "node 1 is told which node is missing"; }
[ "$took" -lt 20 ] || fail "the missing node is reported within the rendezvous time (took $took s)"
echo "ok: a node that never joins fails both launchers in $took s: $(grep -m1 'did not join' missing.node1)"
rc1=0
RDZV=2 node 1 1 true >no_master.txt 2>&1 || rc1=$?
[ "$rc1" -ne 0 ] && grep -q "could not reach node 0 at 10.77.0.1:$PORT" no_master.txt ||
  { cat no_master.txt; fail "a node 0 that never comes fails node 1, naming its address"; }
echo "ok: without node 0: $(head -c 150 no_master.txt)"
echo "two_hosts: all checks passed"
