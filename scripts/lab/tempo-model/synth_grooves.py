#!/usr/bin/env python3
"""Simple synthetic drum loops with known tempo (rock, four-on-the-floor, half-time, DnB two-step,
waltz, ballad, funk, one-drop), used beside rendered grooves to fit the tempo model.
Usage: synth_grooves.py SEED OUT_DIR COUNT   -> OUT_DIR/wav/*.wav and OUT_DIR/truth.json"""
import numpy as np, soundfile as sf, json, sys
sr=44100
seed=int(sys.argv[1]) if len(sys.argv)>1 else 11
out=sys.argv[2] if len(sys.argv)>2 else 'synth'
import os; os.makedirs(out+'/wav',exist_ok=True)
count=int(sys.argv[3]) if len(sys.argv)>3 else 96
rng=np.random.default_rng(seed)
def kick(n,p):
    t=np.arange(n)/sr; return np.sin(2*np.pi*(p['kf']+p['kd']*np.exp(-t*p['ks']))*t)*np.exp(-t*p['kdec'])
def snare(n,p):
    t=np.arange(n)/sr; return (rng.standard_normal(n)*np.exp(-t*p['sdec'])*p['snoise']+np.sin(2*np.pi*p['sf']*t)*np.exp(-t*30)*0.4)
def hat(n,p):
    t=np.arange(n)/sr; return np.convolve(rng.standard_normal(n),[1,-1],'same')*np.exp(-t*p['hdec'])*0.25
def tone(n,f,dec,harm=1):
    t=np.arange(n)/sr; return sum(np.sin(2*np.pi*f*h*t)/h for h in range(1,harm+1))*np.exp(-t*dec)
PAT={ # steps per bar, kick, snare, hat, bpm range
 'rock':(16,[0,8],[4,12],list(range(0,16,2)),(80,180)),
 'four':(16,[0,4,8,12],[4,12],[2,6,10,14],(110,140)),
 'half':(16,[0,6,11],[8],list(range(16)),(120,160)),
 'dnb':(16,[0,10],[4,12],list(range(0,16,2)),(160,180)),
 'waltz':(12,[0],[4,8],[0,4,8],(80,180)),
 'ballad':(16,[0,10],[8],list(range(0,16,2)),(60,85)),
 'funk':(16,[0,3,10],[4,12],list(range(16)),(90,120)),
 'onedrop':(16,[8],[8],list(range(0,16,2)),(65,95)),
}
names=list(PAT); truth=[]
for i in range(count):
    style=names[i%len(names)]; steps,K,S,H,(lo,hi)=PAT[style]
    bpm=float(np.round(rng.uniform(lo,hi),2)); beat=60/bpm; step=beat/4
    dur=30.0; n=int(dur*sr); x=np.zeros(n)
    p=dict(kf=rng.uniform(40,60),kd=rng.uniform(40,120),ks=rng.uniform(20,40),kdec=rng.uniform(8,16),
           sdec=rng.uniform(15,35),snoise=rng.uniform(0.3,0.8),sf=rng.uniform(150,250),hdec=rng.uniform(40,120))
    jitter=rng.uniform(0.002,0.01); bass=rng.random()<0.8; chords=rng.random()<0.7
    root=rng.choice([41,43,45,48])
    def add(sig,at,vel):
        j=int((at+rng.normal(0,jitter))*sr); j=max(j,0); L=min(len(sig),n-j)
        if L>0: x[j:j+L]+=vel*sig[:L]
    bar=0; t=0.5
    while t<dur-2:
        fill = bar%4==3 and rng.random()<0.7
        for s in range(steps):
            at=t+s*step
            if s in K: add(kick(int(0.4*sr),p),at,rng.uniform(0.8,1))
            if s in S: add(snare(int(0.3*sr),p),at,rng.uniform(0.7,1))
            if fill and s>=steps-4: add(snare(int(0.2*sr),p),at,rng.uniform(0.4,0.8))
            if s in H and rng.random()>0.05: add(hat(int(0.1*sr),p),at,rng.uniform(0.3,0.7)*(1.0 if s%4==0 else 0.7))
            if bass and s%(steps//2 if style!='waltz' else 4)==0:
                f=440*2**((root+rng.choice([0,5,7,-2])-69)/12); add(tone(int(beat*1.5*sr),f,3,3),at,0.5)
            if chords and ((style=='onedrop' and s%4==2) or (style!='onedrop' and s==0)):
                f=440*2**((root+24-69)/12); add(sum(tone(int(beat*(0.5 if style=='onedrop' else 3)*sr),f*r,4,4) for r in (1,1.26,1.5)),at,0.2)
        t+=steps*step; bar+=1
    x=x/np.abs(x).max()*10**(rng.uniform(-20,-3)/20)
    name=f'syn_{i:03d}'; sf.write(f'{out}/wav/{name}.wav',x,sr,subtype='PCM_16')
    truth.append(dict(name=name,style=style,bpm=bpm))
json.dump(truth,open(f'{out}/truth.json','w'),indent=1)
print('wrote',len(truth))
