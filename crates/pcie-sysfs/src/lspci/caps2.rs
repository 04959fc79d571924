//! The lines of an `lspci -vvv` dump that say how AtomicOps and peer-to-peer requests are
//! routed: DevCap2's `AtomicOpsCap: Routing+ 32bit+ 64bit+ 128bitCAS+` (`Routing` only on
//! ports), DevCtl2's `AtomicOpsCtl: ReqEn- EgressBlck-` (`ReqEn` on root ports and endpoints,
//! `EgressBlck` on ports), and the Access Control Services capability's `ACSCap:` and `ACSCtl:`
//! (`SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-`).
//! pciutils has printed them in these words since 3.1.8 (2011); an older lspci, or a paste cut
//! before them, leaves them unknown.

use crate::config_builder::ConfigBuilder;
use crate::config_space::{Acs, AtomicOps, ACS_BITS};

/// The `+`/`-` after `name` among `words`.
fn flag(words: &str, name: &str) -> Option<bool> {
    super::flag(words, name)
}

/// AtomicOps from DevCap2's and DevCtl2's text (with their continuation lines); `None` where
/// DevCap2 has no `AtomicOpsCap` (an old lspci or a trimmed paste).
pub(super) fn atomics(devcap2: Option<&str>, devctl2: Option<&str>) -> Option<AtomicOps> {
    let cap = devcap2?.split_once("AtomicOpsCap:")?.1;
    let ctl = devctl2
        .and_then(|c| c.split_once("AtomicOpsCtl:"))
        .map_or("", |(_, r)| r);
    let on = |text: &str, name: &str| flag(text, name).unwrap_or(false);
    Some(AtomicOps {
        routing: on(cap, "Routing"),
        completer32: on(cap, "32bit"),
        completer64: on(cap, "64bit"),
        completer128: on(cap, "128bitCAS"),
        requester_enabled: on(ctl, "ReqEn"),
        egress_blocked: on(ctl, "EgressBlck"),
    })
}

/// The builder with the dump's AtomicOps, or, where it does not show them, its version-2
/// registers marked unknown.
pub(super) fn atomics_into(b: ConfigBuilder, atomics: Option<AtomicOps>) -> ConfigBuilder {
    match atomics {
        Some(a) => b.atomics(a),
        None => b.v2_unknown(),
    }
}

/// One line of the ACS capability (`ACSCap:\t...`, `ACSCtl:\t...`) into `acs`; other lines
/// (`ACSCtl` comes after `ACSCap`) are passed over.
pub(super) fn acs_line(acs: &mut Option<Acs>, text: &str) {
    let Some((key, words)) = text.split_once(':') else {
        return;
    };
    let bits = || {
        ACS_BITS
            .iter()
            .filter(|(_, name)| flag(words, name) == Some(true))
            .fold(0u16, |v, (b, _)| v | 1 << b)
    };
    match key.trim() {
        "ACSCap" => acs.get_or_insert_default().capability = bits(),
        "ACSCtl" => acs.get_or_insert_default().control = bits(),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_ops_in_the_words_of_old_and_new_pciutils() {
        // A root port (pciutils 3.7): completer sizes, no routing, requester and egress controls.
        let rp = atomics(
            Some("Completion Timeout: Range ABC, TimeoutDis+ NROPrPrP- LTR+ 10BitTagComp- 10BitTagReq- OBFF Not Supported, ExtFmt- EETLPPrefix- FRS- LN System CLS Not Supported, TPHComp- ExtTPHComp- ARIFwd+ AtomicOpsCap: Routing- 32bit+ 64bit+ 128bitCAS-"),
            Some("Completion Timeout: 50us to 50ms, TimeoutDis- LTR+ 10BitTagReq- OBFF Disabled, ARIFwd- AtomicOpsCtl: ReqEn- EgressBlck-"),
        )
        .unwrap();
        assert_eq!(
            rp,
            AtomicOps {
                completer32: true,
                completer64: true,
                ..AtomicOps::default()
            }
        );
        // An endpoint: no Routing word, ReqEn only.
        let gpu = atomics(
            Some("Completion Timeout: Range ABCD, TimeoutDis+, LTR+, OBFF Not Supported AtomicOpsCap: 32bit- 64bit- 128bitCAS-"),
            Some("Completion Timeout: 50us to 50ms, TimeoutDis-, LTR+, OBFF Disabled AtomicOpsCtl: ReqEn+"),
        )
        .unwrap();
        assert!(gpu.requester_enabled && !gpu.routing && !gpu.egress_blocked);
        let sw = atomics(
            Some("ARIFwd+ AtomicOpsCap: Routing+ 32bit- 64bit- 128bitCAS-"),
            Some("AtomicOpsCtl: EgressBlck+"),
        )
        .unwrap();
        assert!(sw.routing && sw.egress_blocked && !sw.requester_enabled);
        // An lspci that predates them, or a paste without DevCap2: unknown.
        assert_eq!(
            atomics(Some("Completion Timeout: Not Supported, TimeoutDis-"), None),
            None
        );
        assert_eq!(atomics(None, Some("AtomicOpsCtl: ReqEn+")), None);
    }

    #[test]
    fn acs_lines_read_into_capability_and_control() {
        let mut acs = None;
        acs_line(
            &mut acs,
            "ACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-",
        );
        acs_line(
            &mut acs,
            "ACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-",
        );
        acs_line(&mut acs, "ACSViol: nothing");
        let acs = acs.unwrap();
        assert_eq!((acs.capability, acs.control), (0x1f, 0x1d));
        assert_eq!(
            acs.enabled_names(),
            ["SrcValid", "ReqRedir", "CmpltRedir", "UpstreamFwd"]
        );
        let mut none = None;
        acs_line(&mut none, "Status: D0");
        assert_eq!(none, None);
    }

    /// A switch downstream port as lspci -vvv prints it (a PLX PEX 8747 in a GPU server's
    /// dump; trimmed to the capabilities read here).
    const PORT: &str = "02:08.0 PCI bridge [0604]: PLX Technology, Inc. PEX 8747 48-Lane, 5-Port PCI Express Gen 3 (8.0 GT/s) Switch [10b5:8747] (rev ca)
\tControl: I/O+ Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR- FastB2B- DisINTx+
\tStatus: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast >TAbort- <TAbort- <MAbort- >SERR- <PERR- INTx-
\tBus: primary=02, secondary=03, subordinate=03, sec-latency=0
\tCapabilities: [68] Express (v2) Downstream Port (Slot+), MSI 00
\t\tDevCap:\tMaxPayload 1024 bytes, PhantFunc 0
\t\t\tExtTag- RBE+
\t\tDevCtl:\tCorrErr- NonFatalErr- FatalErr- UnsupReq-
\t\t\tRlxdOrd- ExtTag- PhantFunc- AuxPwr- NoSnoop-
\t\t\tMaxPayload 256 bytes, MaxReadReq 128 bytes
\t\tLnkCap:\tPort #8, Speed 8GT/s, Width x16, ASPM L1, Exit Latency L1 <4us
\t\tLnkCtl:\tASPM Disabled; Disabled- CommClk+
\t\tLnkSta:\tSpeed 8GT/s (ok), Width x16 (ok)
\t\tDevCap2: Completion Timeout: Not Supported, TimeoutDis-, NROPrPrP-, LTR-
\t\t\t 10BitTagComp-, 10BitTagReq-, OBFF Not Supported, ExtFmt-, EETLPPrefix-
\t\t\t EmergencyPowerReduction Not Supported, EmergencyPowerReductionInit-
\t\t\t FRS-, ARIFwd+
\t\t\t AtomicOpsCap: Routing+ 32bit- 64bit- 128bitCAS-
\t\tDevCtl2: Completion Timeout: 50us to 50ms, TimeoutDis-, LTR-, OBFF Disabled, ARIFwd-
\t\t\t AtomicOpsCtl: EgressBlck-
\tCapabilities: [138 v1] Power Budgeting <?>
\tCapabilities: [148 v1] Virtual Channel
\t\tCaps:\tLPEVC=0 RefClk=100ns PATEntryBits=8
\tCapabilities: [f24 v1] Access Control Services
\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl+ DirectTrans+
\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-
\tKernel driver in use: pcieport
";

    #[test]
    fn a_dumps_atomics_and_acs_reach_the_config_space_built_from_it() {
        let f = &crate::lspci::parse(PORT).unwrap()[0];
        let (config, _) = f.config();
        let atomics = AtomicOps::decode(&config).unwrap();
        assert!(atomics.routing && !atomics.egress_blocked && !atomics.completer32);
        let acs = Acs::decode(&config).unwrap();
        assert_eq!((acs.capability, acs.control), (0x7f, 0x1d));
        assert!(acs.enabled(Acs::REQUEST_REDIRECT) && !acs.enabled(Acs::DIRECT_TRANSLATED));
        // The same port with its ACS and DevCap2 lines cut from the paste: both unknown.
        let trimmed: String = PORT
            .lines()
            .filter(|l| !l.contains("ACS") && !l.contains("DevCap2") && !l.starts_with("\t\t\t "))
            .map(|l| format!("{l}\n"))
            .collect();
        let f = &crate::lspci::parse(&trimmed).unwrap()[0];
        let (config, _) = f.config();
        assert_eq!((AtomicOps::decode(&config), Acs::decode(&config)), (None, None));
    }
}
