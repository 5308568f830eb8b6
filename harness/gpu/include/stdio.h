// ncuh: NVRTC has no <stdio.h>; printf is built into device code.
#pragma once
