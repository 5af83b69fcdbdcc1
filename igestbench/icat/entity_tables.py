"""The entity tables of the ICAT API profiles, in the notation of :mod:`igestbench.icat.schema`.

Facts (names, types, relations, NOT NULL, uniqueness, string lengths) are those of ICAT's Java
entity classes; the 6.2 field lists are those its WSDL serves. The 4.3 table is the 6.2 one with
the state of ICAT 4.3.x, read from the entity classes of that generation.
"""

from __future__ import annotations

from igestbench.icat.entity_comments import COMMENTS_4_3, COMMENTS_6_2
from igestbench.icat.schema import Profile, build_profile

TABLE_6_2 = """
Affiliation U(user,name)
    fullReference:String(1023) name:String(1023)! pid:String user>DataPublicationUser!
Application U(facility,name,version)
    facility>Facility! jobs*Job name:String! version:String!
DataCollection
    dataCollectionDatafiles*DataCollectionDatafile dataCollectionDatasets*DataCollectionDataset
    dataCollectionInvestigations*DataCollectionInvestigation
    dataPublications*DataPublication.content
    doi:String jobsAsInput*Job.inputDataCollection jobsAsOutput*Job.outputDataCollection
    parameters*DataCollectionParameter
DataCollectionDatafile U(dataCollection,datafile)
    dataCollection>DataCollection! datafile>Datafile!
DataCollectionDataset U(dataCollection,dataset)
    dataCollection>DataCollection! dataset>Dataset!
DataCollectionInvestigation U(dataCollection,investigation)
    dataCollection>DataCollection! investigation>Investigation!
DataCollectionParameter base=Parameter U(dataCollection,type)
    dataCollection>DataCollection!
DataPublication U(facility,pid)
    content>DataCollection! dates*DataPublicationDate description:String(4000) facility>Facility!
    fundingReferences*DataPublicationFunding internalId:String pid:String! publicationDate:Date
    relatedItems*RelatedItem subject:String(1023) subjects*Subject title:String(4000)!
    type>DataPublicationType users*DataPublicationUser
DataPublicationDate U(publication,dateType)
    date:String! dateType:String! publication>DataPublication!
DataPublicationFunding U(dataPublication,funding)
    dataPublication>DataPublication! funding>FundingReference!
DataPublicationType U(facility,name)
    dataPublications*DataPublication description:String facility>Facility! name:String!
DataPublicationUser U(publication,user,contributorType)
    affiliations*Affiliation contributorType:String! email:String familyName:String
    fullName:String givenName:String orderKey:String publication>DataPublication! user>User!
Datafile root U(dataset,name)
    checksum:String dataCollectionDatafiles*DataCollectionDatafile datafileCreateTime:Date
    datafileFormat>DatafileFormat datafileModTime:Date dataset>Dataset! description:String
    destDatafiles*RelatedDatafile.destDatafile doi:String fileSize:Long=0 location:String(511)
    name:String! parameters*DatafileParameter sourceDatafiles*RelatedDatafile.sourceDatafile
DatafileFormat U(facility,name,version)
    datafiles*Datafile description:String facility>Facility! name:String! type:String
    version:String!
DatafileParameter root base=Parameter U(datafile,type)
    datafile>Datafile!
Dataset root U(investigation,name)
    complete:boolean! dataCollectionDatasets*DataCollectionDataset datafiles*Datafile
    datasetInstruments*DatasetInstrument datasetTechniques*DatasetTechnique description:String
    doi:String endDate:Date fileCount:Long=0 fileSize:Long=0 investigation>Investigation!
    location:String(511) name:String! parameters*DatasetParameter sample>Sample startDate:Date
    type>DatasetType!
DatasetInstrument U(dataset,instrument)
    dataset>Dataset! instrument>Instrument!
DatasetParameter root base=Parameter U(dataset,type)
    dataset>Dataset!
DatasetTechnique U(dataset,technique)
    dataset>Dataset! technique>Technique!
DatasetType U(facility,name)
    datasets*Dataset description:String facility>Facility! name:String!
Facility U(name)
    applications*Application dataPublicationTypes*DataPublicationType
    dataPublications*DataPublication
    datafileFormats*DatafileFormat datasetTypes*DatasetType daysUntilRelease:Integer
    description:String(1023) facilityCycles*FacilityCycle fullName:String instruments*Instrument
    investigationTypes*InvestigationType investigations*Investigation name:String!
    parameterTypes*ParameterType sampleTypes*SampleType url:String
FacilityCycle U(facility,name)
    description:String endDate:Date facility>Facility!
    investigationFacilityCycles*InvestigationFacilityCycle name:String! startDate:Date
FundingReference U(funderName,awardNumber)
    acknowledgement:String(1023) awardNumber:String! awardTitle:String funderIdentifier:String
    funderName:String! investigations*InvestigationFunding publications*DataPublicationFunding
Grouping U(name)
    investigationGroups*InvestigationGroup name:String! rules*Rule userGroups*UserGroup
Instrument U(facility,name)
    datasetInstruments*DatasetInstrument description:String(4000) endDate:Date facility>Facility!
    fullName:String instrumentScientists*InstrumentScientist
    investigationInstruments*InvestigationInstrument name:String! pid:String shifts*Shift
    startDate:Date type:String url:String
InstrumentScientist U(user,instrument)
    instrument>Instrument! user>User!
Investigation U(facility,name,visitId)
    dataCollectionInvestigations*DataCollectionInvestigation datasets*Dataset doi:String
    endDate:Date facility>Facility! fileCount:Long=0 fileSize:Long=0
    fundingReferences*InvestigationFunding investigationFacilityCycles*InvestigationFacilityCycle
    investigationGroups*InvestigationGroup investigationInstruments*InvestigationInstrument
    investigationUsers*InvestigationUser keywords*Keyword name:String!
    parameters*InvestigationParameter
    publications*Publication releaseDate:Date samples*Sample shifts*Shift startDate:Date
    studyInvestigations*StudyInvestigation summary:String(4000) title:String!
    type>InvestigationType!
    visitId:String!
InvestigationFacilityCycle U(facilityCycle,investigation)
    facilityCycle>FacilityCycle! investigation>Investigation!
InvestigationFunding U(investigation,funding)
    funding>FundingReference! investigation>Investigation!
InvestigationGroup U(grouping,investigation,role)
    grouping>Grouping! investigation>Investigation! role:String!
InvestigationInstrument U(investigation,instrument)
    instrument>Instrument! investigation>Investigation!
InvestigationParameter root base=Parameter U(investigation,type)
    investigation>Investigation!
InvestigationType U(name,facility)
    description:String facility>Facility! investigations*Investigation name:String!
InvestigationUser U(user,investigation,role)
    investigation>Investigation! role:String! user>User!
Job
    application>Application! arguments:String inputDataCollection>DataCollection
    outputDataCollection>DataCollection
Keyword U(name,investigation)
    investigation>Investigation! name:String!
Parameter abstract
    dateTimeValue:Date error:Double numericValue:Double rangeBottom:Double rangeTop:Double
    stringValue:String(4000) type>ParameterType!
ParameterType U(facility,name,units)
    applicableToDataCollection:boolean applicableToDatafile:boolean applicableToDataset:boolean
    applicableToInvestigation:boolean applicableToSample:boolean
    dataCollectionParameters*DataCollectionParameter datafileParameters*DatafileParameter
    datasetParameters*DatasetParameter description:String enforced:boolean facility>Facility!
    investigationParameters*InvestigationParameter maximumNumericValue:Double
    minimumNumericValue:Double name:String! permissibleStringValues*PermissibleStringValue
    pid:String sampleParameters*SampleParameter units:String! unitsFullName:String
    valueType:ParameterValueType! verified:boolean
PermissibleStringValue U(value,type)
    type>ParameterType! value:String!
PublicStep U(origin,field)
    field:String(32)! origin:String(32)!
Publication
    doi:String fullReference:String(511)! investigation>Investigation! repository:String
    repositoryId:String url:String
RelatedDatafile U(sourceDatafile,destDatafile)
    destDatafile>Datafile! relation:String! sourceDatafile>Datafile!
RelatedItem U(publication,identifier)
    fullReference:String(1023) identifier:String! publication>DataPublication!
    relatedItemType:String
    relationType:String! title:String(1023)
Rule
    attribute:String crudFlags:String(4)! grouping>Grouping searchJPQL:String(1024)
    what:String(1024)!
Sample U(investigation,name)
    datasets*Dataset investigation>Investigation! name:String! parameters*SampleParameter pid:String
    type>SampleType
SampleParameter root base=Parameter U(sample,type)
    sample>Sample!
SampleType U(facility,name,molecularFormula)
    facility>Facility! molecularFormula:String! name:String! safetyInformation:String(4000)
    samples*Sample
Shift U(investigation,startDate,endDate)
    comment:String endDate:Date! instrument>Instrument investigation>Investigation! startDate:Date!
Study
    description:String(4000) endDate:Date name:String! pid:String startDate:Date status:StudyStatus
    studyInvestigations*StudyInvestigation user>User
StudyInvestigation U(study,investigation)
    investigation>Investigation! study>Study!
Subject U(dataPublication,name)
    classificationCode:String dataPublication>DataPublication! name:String! pid:String
    schemeURI:String subjectScheme:String valueURI:String
Technique U(name)
    datasetTechniques*DatasetTechnique description:String name:String! pid:String
User U(name)
    affiliation:String dataPublicationUsers*DataPublicationUser email:String familyName:String
    fullName:String givenName:String instrumentScientists*InstrumentScientist
    investigationUsers*InvestigationUser name:String! orcidId:String studies*Study
    userGroups*UserGroup
UserGroup U(user,grouping)
    grouping>Grouping! user>User!
"""

# ICAT 4.3.x: 38 entity types (Log included, no InvestigationGroup, no 5.0 additions);
# InvestigationUser unique on (user, investigation) with an optional role; no 6.x defaults.
TABLE_4_3 = """
Application U(facility,name,version)
    facility>Facility! jobs*Job.application name:String! version:String!
DataCollection
    dataCollectionDatafiles*DataCollectionDatafile.dataCollection
    dataCollectionDatasets*DataCollectionDataset.dataCollection
    jobsAsInput*Job.inputDataCollection jobsAsOutput*Job.outputDataCollection
    parameters*DataCollectionParameter.dataCollection
DataCollectionDatafile U(dataCollection,datafile)
    dataCollection>DataCollection! datafile>Datafile!
DataCollectionDataset U(dataCollection,dataset)
    dataCollection>DataCollection! dataset>Dataset!
DataCollectionParameter base=Parameter U(dataCollection,type)
    dataCollection>DataCollection!
Datafile root U(dataset,name)
    checksum:String dataCollectionDatafiles*DataCollectionDatafile.datafile
    datafileCreateTime:Date datafileFormat>DatafileFormat datafileModTime:Date dataset>Dataset!
    description:String destDatafiles*RelatedDatafile.destDatafile doi:String fileSize:Long
    location:String name:String! parameters*DatafileParameter.datafile
    sourceDatafiles*RelatedDatafile.sourceDatafile
DatafileFormat U(facility,name,version)
    datafiles*Datafile.datafileFormat description:String facility>Facility! name:String!
    type:String version:String!
DatafileParameter base=Parameter root U(datafile,type)
    datafile>Datafile!
Dataset root U(investigation,name)
    complete:boolean! dataCollectionDatasets*DataCollectionDataset.dataset
    datafiles*Datafile.dataset description:String doi:String endDate:Date
    investigation>Investigation! location:String name:String!
    parameters*DatasetParameter.dataset sample>Sample startDate:Date type>DatasetType!
DatasetParameter base=Parameter root U(dataset,type)
    dataset>Dataset!
DatasetType U(facility,name)
    datasets*Dataset.type description:String facility>Facility! name:String!
Facility U(name)
    applications*Application.facility datafileFormats*DatafileFormat.facility
    datasetTypes*DatasetType.facility daysUntilRelease:Integer description:String(1023)
    facilityCycles*FacilityCycle.facility fullName:String instruments*Instrument.facility
    investigationTypes*InvestigationType.facility investigations*Investigation.facility
    name:String! parameterTypes*ParameterType.facility sampleTypes*SampleType.facility
    url:String
FacilityCycle U(facility,name)
    description:String endDate:Date facility>Facility! name:String! startDate:Date
Grouping U(name)
    name:String! rules*Rule.grouping userGroups*UserGroup.grouping
Instrument U(facility,name)
    description:String(4000) facility>Facility! fullName:String
    instrumentScientists*InstrumentScientist.instrument
    investigationInstruments*InvestigationInstrument.instrument name:String! type:String
    url:String
InstrumentScientist U(user,instrument)
    instrument>Instrument! user>User!
Investigation U(facility,name,visitId)
    datasets*Dataset.investigation doi:String endDate:Date facility>Facility!
    investigationInstruments*InvestigationInstrument.investigation
    investigationUsers*InvestigationUser.investigation keywords*Keyword.investigation
    name:String! parameters*InvestigationParameter.investigation
    publications*Publication.investigation releaseDate:Date samples*Sample.investigation
    shifts*Shift.investigation startDate:Date
    studyInvestigations*StudyInvestigation.investigation summary:String(4000) title:String!
    type>InvestigationType! visitId:String!
InvestigationInstrument U(investigation,instrument)
    instrument>Instrument! investigation>Investigation!
InvestigationParameter base=Parameter root U(investigation,type)
    investigation>Investigation!
InvestigationType U(name,facility)
    description:String facility>Facility! investigations*Investigation.type name:String!
InvestigationUser U(user,investigation)
    investigation>Investigation! role:String user>User!
Job
    application>Application! arguments:String inputDataCollection>DataCollection
    outputDataCollection>DataCollection
Keyword U(name,investigation)
    investigation>Investigation! name:String!
Log root
    duration:Long entityId:Long entityName:String operation:String query:String(4000)
Parameter abstract
    dateTimeValue:Date error:Double numericValue:Double rangeBottom:Double rangeTop:Double
    stringValue:String(4000) type>ParameterType!
ParameterType U(facility,name,units)
    applicableToDataCollection:boolean applicableToDatafile:boolean applicableToDataset:boolean
    applicableToInvestigation:boolean applicableToSample:boolean
    dataCollectionParameters*DataCollectionParameter.type
    datafileParameters*DatafileParameter.type datasetParameters*DatasetParameter.type
    description:String enforced:boolean facility>Facility!
    investigationParameters*InvestigationParameter.type maximumNumericValue:Double
    minimumNumericValue:Double name:String! permissibleStringValues*PermissibleStringValue.type
    sampleParameters*SampleParameter.type units:String! unitsFullName:String
    valueType:ParameterValueType! verified:boolean
PermissibleStringValue U(value,type)
    type>ParameterType! value:String!
PublicStep U(origin,field)
    field:String(32)! origin:String(32)!
Publication
    doi:String fullReference:String(511)! investigation>Investigation! repository:String
    repositoryId:String url:String
RelatedDatafile U(sourceDatafile,destDatafile)
    destDatafile>Datafile! relation:String! sourceDatafile>Datafile!
Rule
    crudFlags:String(4)! grouping>Grouping what:String!
Sample U(investigation,name)
    datasets*Dataset.sample investigation>Investigation! name:String!
    parameters*SampleParameter.sample type>SampleType
SampleParameter base=Parameter root U(sample,type)
    sample>Sample!
SampleType U(facility,name,molecularFormula)
    facility>Facility! molecularFormula:String! name:String! safetyInformation:String(4000)
    samples*Sample.type
Shift U(investigation,startDate,endDate)
    comment:String endDate:Date! investigation>Investigation! startDate:Date!
Study
    description:String(4000) name:String! startDate:Date status:StudyStatus
    studyInvestigations*StudyInvestigation.study user>User
StudyInvestigation U(study,investigation)
    investigation>Investigation! study>Study!
User U(name)
    fullName:String instrumentScientists*InstrumentScientist.user
    investigationUsers*InvestigationUser.user name:String! studies*Study.user
    userGroups*UserGroup.user
UserGroup U(user,grouping)
    grouping>Grouping! user>User!
"""

#: The indexes ICAT's deployments have beyond each table's unique key and its foreign keys'
#: (which MariaDB/MySQL's InnoDB makes for every foreign key no other index starts with):
#: the ``indices.sql`` icat.server ships and its installation guide asks for (identical in tags
#: v4.3.3, ear/src/main/config/, and v6.2.0, src/main/config/), and from 4.x on the JPA
#: ``@Index`` annotations of its entity classes (v6.2.0: ``Datafile(location)`` alone).
_PARAMETER_VALUES = (("stringValue",), ("numericValue",), ("dateTimeValue",))
INDEXES_4_3: dict[str, tuple[tuple[str, ...], ...]] = {
    **{p: _PARAMETER_VALUES for p in ("DatasetParameter", "DatafileParameter",
                                       "InvestigationParameter", "SampleParameter",
                                       "DataCollectionParameter")},
    "Dataset": (("startDate",),),
}  # fmt: skip
INDEXES_6_2 = {**INDEXES_4_3, "Datafile": (("location",),)}

FAULT_TYPES_6_2 = (
    "BAD_PARAMETER",
    "INTERNAL",
    "INSUFFICIENT_PRIVILEGES",
    "NO_SUCH_OBJECT_FOUND",
    "OBJECT_ALREADY_EXISTS",
    "SESSION",
    "VALIDATION",
    "NOT_IMPLEMENTED",
)

PROFILES: dict[str, Profile] = {
    "6.2": build_profile(
        name="6.2",
        api_version="6.2.0",
        table=TABLE_6_2,
        base_field_order=("createId", "createTime", "id", "modId", "modTime"),
        fault_types=FAULT_TYPES_6_2,
        comments=COMMENTS_6_2,
        indexes=INDEXES_6_2,
    ),
    "4.3": build_profile(
        name="4.3",
        api_version="4.3.3",
        table=TABLE_4_3,
        # the element order JAX-WS of that generation gave EntityBaseBean (as in the 4.2 XSD)
        base_field_order=("createId", "createTime", "modTime", "id", "modId"),
        fault_types=FAULT_TYPES_6_2[:-1],  # NOT_IMPLEMENTED came with 4.6
        comments=COMMENTS_4_3,
        indexes=INDEXES_4_3,
    ),
}
