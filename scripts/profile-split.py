#!/usr/bin/env python3
"""Split the QEMU exec-log profile into the issue-25 parts by source.

The Rust profile (`throughput_qemu`, `instructions_per_sample_by_function`)
charges a block to the ELF function it lies in, so code inlined into the
engine task's handler counts as "loop". This script charges every executed
instruction to the work it does, by its DWARF inline chain (GNU
`addr2line -i`, from binutils):

    capture   the target line's interrupt, collect, deliver's answers,
              matching (on_response), the sample recorded
    stimulus  the wake-up interrupt, plan / plan_next / arming, the
              stimulus's tick reported, the deadline
    encoding  the sample pushed into its batch, postcard, CRC, COBS, emit
    link      the host link's driver
    meter     the figure's own instrument
    dispatch  RTIC's locks and dispatch, the idle loop

What decides, in order: the meter anywhere in the chain (its counter
reads are inlined into what it measures); the interrupt the code runs in
(`USART2` capture, `SysTick` stimulus, `USART1` / `EXTI0` link); else the
innermost frame that names one of the parts. A function the compiler kept
out of line (`Front::now`) is shared among its call sites by how often
each ran. The Rust profile's `PROFILE_PARTS` is a different cut (by ELF
function, no inline chains): only the totals compare (within about 1 %
on 95b16ca: 2 285 here, 2 312 there). Usage, after a profile run with
`LATPROBE_PROFILE_DUMP=/tmp/pcs`:

    llvm-objdump -d --no-show-raw-insn ELF > /tmp/dis.txt
    scripts/profile-split.py ELF /tmp/dis.txt /tmp/pcs.200 /tmp/pcs.1200 1000 [part]

(1000: the samples between the two runs.) With a part, also its costliest
inline chains.
"""
import bisect, collections, re, subprocess, sys

elf, dis, short, long_, per = sys.argv[1:6]
per = float(per)
want = sys.argv[6] if len(sys.argv) > 6 else None
calls, syms = {}, []
for l in open(dis):
    m = re.match(r'^([0-9a-f]{8}) <(.*)>:', l)
    if m:
        syms.append((int(m.group(1), 16), m.group(2)))
    m = re.match(r'^ ([0-9a-f]+):\s+(\S+)\s*(.*)$', l)
    if m:
        addr = int(m.group(1), 16)
        t = re.search(r'\bbl\s+0x([0-9a-f]+)', l)
        if t:
            calls[addr] = int(t.group(1), 16)
syms.sort()
starts = [s for s, _ in syms]


def sym(a):
    return syms[bisect.bisect_right(starts, a) - 1]


def load(p):
    d = {}
    for l in open(p):
        pc, n = l.split()
        d[int(pc, 16)] = int(n)
    return d


# Executions per instruction, the long run's less the short run's.
cnt = collections.Counter()
for d, s in ((load(long_), 1), (load(short), -1)):
    for pc, n in d.items():
        cnt[pc] += s * n
addrs = sorted(set(a for a, c in cnt.items() if c) | set(calls))
out = subprocess.run(['addr2line', '-f', '-i', '-C', '-e', elf, '-a'] + ['0x%x' % x for x in addrs],
                     capture_output=True, text=True, check=True).stdout.splitlines()
chains, cur, i = {}, None, 0
while i < len(out):
    if out[i].startswith('0x'):
        cur = int(out[i], 16)
        chains[cur] = []
        i += 1
    else:
        chains[cur].append(out[i])
        i += 2

METER = ['cpu::CpuMeter', 'Meter<', 'Tim2Cnt', 'common::Counter']
ROOTS = {'USART2': 'capture', 'SysTick': 'stimulus', 'EXTI0': 'link', 'USART1': 'link'}
RULES = [
    ('encoding', ['batch::', 'postcard', 'cobs', 'crc', 'framing', 'varint', 'serde', '::emit',
                  'Engine<_>>::enqueue', 'flush']),
    ('link', ['serial::', 'uart::']),
    ('capture', ['on_target_rx', 'Front::push', 'Front::collect', 'has_events', 'HwLoop>::deliver',
                 'on_byte', 'slot_of_byte', 'identity_of', 'on_response', 'record_sample', 'pairer',
                 'StartBitPairer', 'unskew', 'answered', 'on_capture']),
    ('stimulus', ['arm::', 'plan_next', 'on_stimulus', 'HwLoop>::stimulus', 'write_due', 'on_wake',
                  'set_compare', 'take_compare', 'deadline', 'on_timer_interrupt', 'schedule::',
                  'HwLoop>::queue', 'HwLoop>::sent']),
    ('engine poll', ['Engine<_>::poll', 'Engine<_>::saw', 'run_start', 'wants_more', 'in_flight']),
    ('dispatch', ['rtic', 'engine_task', 'idle', 'basepri', 'primask', 'critical_section',
                  'interrupt::', 'EXTI1', 'HwLoop::run']),
]


def decide(a):
    chain = chains.get(a, [])
    if any(k in f for f in chain for k in METER):
        return 'meter'
    root = sym(a)[1]
    if root in ROOTS:
        return ROOTS[root]
    for f in chain:
        for part, keys in RULES:
            if any(k in f for k in keys):
                return part
    return None


parts, undecided = collections.Counter(), collections.Counter()
for a, c in cnt.items():
    p = decide(a)
    if p:
        parts[p] += c
    else:
        undecided[sym(a)] += c
callers = collections.defaultdict(collections.Counter)
for x, t in calls.items():
    if cnt.get(x, 0) > 0:
        callers[sym(t)][decide(x) or ('sym', sym(x))] += cnt[x]


def share(s, seen=()):
    """How a function's own instructions divide among the parts."""
    if s in seen or sum(callers[s].values()) <= 0:
        return {'other': 1.0}
    tot = sum(callers[s].values())
    out = collections.Counter()
    for p, n in callers[s].items():
        if isinstance(p, tuple):
            for q, w in share(p[1], seen + (s,)).items():
                out[q] += w * n / tot
        else:
            out[p] += n / tot
    return out


for s, c in undecided.items():
    for q, w in share(s).items():
        parts[q] += c * w
for p, v in parts.most_common():
    print('%-12s %7.1f' % (p, v / per))
print('%-12s %7.1f' % ('total', sum(parts.values()) / per))
if want:
    det = collections.Counter()
    for a, c in cnt.items():
        if decide(a) == want:
            det[' < '.join(chains[a][:3])] += c
    for k, v in det.most_common(30):
        print('%6.1f %s' % (v / per, k[:200]))
