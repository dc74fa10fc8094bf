package main

const (
	sysOpenat2   = 437
	sysExecveat  = 281
	sysFchmodat2 = 452
)

const sysFstatat = 79

const sysSetitimer = 103
