#!/usr/bin/env python3
# Summary of scripts/monkey-fp.sh output dirs: per level (L1 and below) the measured false-positive
# rate and bits in force; their sum is the wasted probes of a lookup that asks each level once,
# which does not depend on how many L0 files a load happened to leave.
# Usage: scripts/monkey-summary.py OUT_DIR...
import sys,re,os,math
for d in sys.argv[1:]:
  for bits in (2,10):
    row={}
    for alloc in ('uniform','monkey'):
      t=f'{alloc}-{bits}'
      txt=open(os.path.join(d,f'{t}-readmissing.txt')).read()
      fp=0; sz=[]; bl=[]; rt=[]; s=0; mem=0; ent=0; l0=0
      for line in txt.splitlines():
        m=re.match(r'^L(\d)\s+(\d+)\s+(\d+)\s+(\d+)\s+\S+\s+\S+\s+(\S+)\s+(\d+)\s+(\d+)\s+(\S+)$',line)
        if m and int(m.group(2))>0:
          lv=int(m.group(1)); fp+=int(m.group(7))
          if lv==0: l0=int(m.group(4)); continue
          sz.append(f'{int(m.group(4))/1e6:.0f}'); bl.append(m.group(5)); rt.append(float(m.group(8))); s+=float(m.group(8))
          mem+=float(m.group(5))*int(m.group(4)); ent+=int(m.group(4))
      row[alloc]=s
      ratio='' if alloc=='uniform' else f' ({s/row["uniform"]:.2f}x)'
      print(f'| {os.path.basename(d)} | {bits} | {alloc} | {l0/1e6:.0f} | {" / ".join(sz)} | {" / ".join(bl)} | {mem/ent:.2f} | {" / ".join(f"{r:.4f}" for r in rt)} | {s:.4f}{ratio} | {fp/200000:.4f} |')
